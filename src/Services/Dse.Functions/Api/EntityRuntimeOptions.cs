namespace Dse.Functions;

/// <summary>How an <see cref="EntityRuntime"/> cuts epochs and splits its entities.</summary>
public sealed class EntityRuntimeOptions
{
    /// <summary>The default of <see cref="MaxCallDepth"/>.</summary>
    public const int DefaultMaxCallDepth = 64;

    /// <summary>Partitions, each with its own thread and its share of the entities (by a stable hash of the key). Default 2.</summary>
    public int Partitions { get; set; } = 2;

    /// <summary>An epoch closes once it holds this many new transactions (Styx's default: 1000).</summary>
    public int EpochMaxTransactions { get; set; } = 1000;

    /// <summary>
    /// An epoch closes at the latest this long after its first transaction arrived (Styx's default: 1 ms); it also
    /// waits for the previous epoch to end. <see cref="TimeSpan.Zero"/> closes an epoch as soon as the partitions are
    /// ready for it.
    /// </summary>
    public TimeSpan EpochInterval { get; set; } = TimeSpan.FromMilliseconds(1);

    /// <summary>The deepest nesting of calls a transaction may make; a deeper call aborts it. Default 64.</summary>
    public int MaxCallDepth { get; set; } = DefaultMaxCallDepth;

    /// <summary>The clock that stamps epochs (<see cref="EntityContext.UtcNow"/>). Default: the system's.</summary>
    public TimeProvider Time { get; set; } = TimeProvider.System;

    internal void Validate()
    {
        if (Partitions is < 1 or > 256)
        {
            throw new ArgumentOutOfRangeException(nameof(Partitions), Partitions, "Partitions must be between 1 and 256.");
        }

        if (EpochMaxTransactions < 1)
        {
            throw new ArgumentOutOfRangeException(nameof(EpochMaxTransactions), EpochMaxTransactions, "An epoch must be allowed at least one transaction.");
        }

        if (EpochInterval < TimeSpan.Zero)
        {
            throw new ArgumentOutOfRangeException(nameof(EpochInterval), EpochInterval, "The epoch interval cannot be negative.");
        }

        if (MaxCallDepth is < 1 or > 100)
        {
            throw new ArgumentOutOfRangeException(nameof(MaxCallDepth), MaxCallDepth, "The call depth limit must be between 1 and 100 (completion credit allows about 120 nested calls).");
        }

        ArgumentNullException.ThrowIfNull(Time);
    }
}
