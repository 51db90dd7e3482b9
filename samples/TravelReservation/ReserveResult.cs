namespace Dse.Samples.TravelReservation;

/// <summary>What a reserve did: <see cref="Reserved"/> when the trip holds the item now (newly or already), else <see cref="Reason"/> says why not.</summary>
public readonly record struct ReserveResult(bool Reserved, string Reason)
{
    /// <summary>The reason for an item at its capacity.</summary>
    public const string Full = "full";
}
