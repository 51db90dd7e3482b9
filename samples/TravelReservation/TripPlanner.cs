namespace Dse.Samples.TravelReservation;

/// <summary>
/// Draws what each trip books, from a seeded <see cref="Random"/>: from each service, the popular item (item 0) with
/// probability <see cref="PopularShare"/>, otherwise one of the others uniformly. With the default capacity only the
/// popular item fills up, so a steady share of trips fail on it and compensate what they had reserved.
/// </summary>
public sealed class TripPlanner(int seed, int items)
{
    /// <summary>The share of reservations that ask for a service's popular item.</summary>
    public const double PopularShare = 0.05;

    private readonly Random _random = new(seed);

    /// <summary>The next trip's input, booking the first <paramref name="services"/> services.</summary>
    public TripInput Next(int services)
    {
        ArgumentOutOfRangeException.ThrowIfNegativeOrZero(services);
        ArgumentOutOfRangeException.ThrowIfGreaterThan(services, TravelServices.Max);
        var chosen = new string[services];
        for (int i = 0; i < services; i++)
        {
            int item = items == 1 || _random.NextDouble() < PopularShare ? 0 : 1 + _random.Next(items - 1);
            chosen[i] = TravelServices.ItemName(TravelServices.Names[i], item);
        }

        return new TripInput(chosen);
    }
}
