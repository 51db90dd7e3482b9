namespace Dse.Samples.TravelReservation;

/// <summary>What a <see cref="TravelRun"/> does. Validated when the run starts.</summary>
public sealed class TravelOptions
{
    /// <summary>The most trips per second the launcher sends.</summary>
    public const double MaxRate = 10000;

    /// <summary>The largest capacity per item (an item's holders are one record of its store).</summary>
    public const int MaxCapacity = 1000;

    /// <summary>
    /// The configurations to measure, each a number of services a trip books (the first N of hotel, flight, car, train,
    /// insurance). Default 1 to 5, the rows of libDSE's Fig. 9. One cluster per mode serves them all, with as many
    /// services as the largest.
    /// </summary>
    public IReadOnlyList<int> Services { get; set; } = [1, 2, 3, 4, 5];

    /// <summary>Trips per second, sent open-loop (on schedule, whether or not earlier trips have answered). Default 10, as in Fig. 9.</summary>
    public double Rate { get; set; } = 10;

    /// <summary>
    /// How long each configuration sends trips. Default 3 s: both modes of the five configurations in about a minute
    /// on a 2-core machine (the paper ran 120 s).
    /// </summary>
    public TimeSpan Duration { get; set; } = TimeSpan.FromSeconds(3);

    /// <summary>
    /// Trips each cluster books before measuring (JIT, connections, the first group commits), over all its services, at
    /// <see cref="WarmUpRate"/>; checked, not measured. Default 80: in two halves, so that the second half calls every hot path often enough (30 times) for the runtime to compile it optimized before the measured trips.
    /// </summary>
    public int WarmUpTrips { get; set; } = 80;

    /// <summary>The warm-up's trips per second: <see cref="Rate"/>, and at least 40, so that a slow rate does not make the warm-up long.</summary>
    public double WarmUpRate => Math.Max(Rate, 40);

    /// <summary>Which clusters to run. Default <see cref="TravelMode.Both"/>.</summary>
    public TravelMode Mode { get; set; } = TravelMode.Both;

    /// <summary>
    /// Whether to kill -9 a reservation service and, later, the frontend at seeded moments of each cluster's load, each
    /// restarted on its port and storage. Default false.
    /// </summary>
    public bool Chaos { get; set; }

    /// <summary>The seed of the trips' items and of the chaos (which service, when). Default null: chosen at random and reported.</summary>
    public int? Seed { get; set; }

    /// <summary>Items per service (<c>hotel-0</c> ...). Default 50; item 0 of each service is the popular one (<see cref="TripPlanner"/>).</summary>
    public int Items { get; set; } = 50;

    /// <summary>
    /// Trips each item can hold. Default null: <see cref="EffectiveCapacity"/>, one and a half times what an ordinary
    /// item is expected to be asked for in a run, so that the popular item fills up (and now and then an ordinary one),
    /// and trips that ask for a full item fail and compensate.
    /// </summary>
    public int? Capacity { get; set; }

    /// <summary>Every process's group-commit period. Default 10 ms; whole milliseconds from 1 to 10000.</summary>
    public TimeSpan GroupCommit { get; set; } = TimeSpan.FromMilliseconds(10);

    /// <summary>
    /// Where the clusters keep their storage and logs (one subfolder per mode, emptied first), kept afterwards.
    /// Default null: a temp folder, deleted at the end.
    /// </summary>
    public string? DataDirectory { get; set; }

    /// <summary>Trips per configuration: <see cref="Rate"/> times <see cref="Duration"/>, at least one.</summary>
    public int TripsPerConfiguration => Math.Max(1, (int)Math.Round(Rate * Duration.TotalSeconds));

    /// <summary>The capacity per item this run uses: <see cref="Capacity"/>, or its default.</summary>
    public int EffectiveCapacity
    {
        get
        {
            if (Capacity is { } capacity)
            {
                return capacity;
            }

            // The first service is asked by every trip of the run; an ordinary item gets its share of what the popular
            // one does not draw.
            double demand = WarmUpTrips + ((double)TripsPerConfiguration * Services.Count);
            double perOrdinaryItem = (1 - TripPlanner.PopularShare) * demand / Math.Max(1, Items - 1);
            return Math.Clamp((int)Math.Ceiling(1.5 * perOrdinaryItem), 2, MaxCapacity);
        }
    }

    /// <summary>Throws an <see cref="ArgumentException"/> naming the first invalid option.</summary>
    public void Validate()
    {
        if (Services is null || Services.Count == 0)
        {
            throw new ArgumentException($"{nameof(Services)} must name at least one configuration.", nameof(Services));
        }

        foreach (int n in Services)
        {
            if (n is < 1 or > TravelServices.Max)
            {
                throw new ArgumentException($"{nameof(Services)}: a trip books 1 to {TravelServices.Max} services (got {n}).", nameof(Services));
            }
        }

        if (!double.IsFinite(Rate) || Rate <= 0 || Rate > MaxRate)
        {
            throw new ArgumentException($"{nameof(Rate)} must be above 0 and at most {MaxRate} trips/s (got {Rate}).", nameof(Rate));
        }

        if (Duration <= TimeSpan.Zero || Duration > TimeSpan.FromHours(1))
        {
            throw new ArgumentException($"{nameof(Duration)} must be above 0 and at most an hour (got {Duration.TotalSeconds} s).", nameof(Duration));
        }

        if (WarmUpTrips < 0)
        {
            throw new ArgumentException($"{nameof(WarmUpTrips)} must not be negative (got {WarmUpTrips}).", nameof(WarmUpTrips));
        }

        if (Items is < 1 or > 1000)
        {
            throw new ArgumentException($"{nameof(Items)} must be between 1 and 1000 (got {Items}).", nameof(Items));
        }

        if (Capacity is < 1 or > MaxCapacity)
        {
            throw new ArgumentException($"{nameof(Capacity)} must be between 1 and {MaxCapacity} (got {Capacity}).", nameof(Capacity));
        }

        if (GroupCommit < TimeSpan.FromMilliseconds(1) || GroupCommit > TimeSpan.FromSeconds(10) || GroupCommit.Ticks % TimeSpan.TicksPerMillisecond != 0)
        {
            throw new ArgumentException($"{nameof(GroupCommit)} must be whole milliseconds between 1 ms and 10 s (got {GroupCommit.TotalMilliseconds} ms).", nameof(GroupCommit));
        }

        if (!Enum.IsDefined(Mode))
        {
            throw new ArgumentException($"{nameof(Mode)} {Mode} is not a mode.", nameof(Mode));
        }
    }
}
