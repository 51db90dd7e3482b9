namespace Dse.Samples.TravelReservation;

/// <summary>
/// The sample's reservation services, in booking order, and the DSE ids of its processes: the frontend is 1, the
/// services follow it (hotel 2, flight 3, car 4, train 5, insurance 6).
/// </summary>
public static class TravelServices
{
    /// <summary>The frontend's DSE id.</summary>
    public const long FrontendId = 1;

    /// <summary>The most services a cluster runs.</summary>
    public const int Max = 5;

    /// <summary>The services' names in booking order: a trip over N services books the first N.</summary>
    public static IReadOnlyList<string> Names { get; } = ["hotel", "flight", "car", "train", "insurance"];

    /// <summary>The DSE id of the service at <paramref name="index"/> in <see cref="Names"/>.</summary>
    public static long IdOf(int index) => FrontendId + 1 + index;

    /// <summary>The name of item <paramref name="index"/> of <paramref name="service"/>, for example <c>hotel-7</c>.</summary>
    public static string ItemName(string service, int index) => string.Create(System.Globalization.CultureInfo.InvariantCulture, $"{service}-{index}");
}
