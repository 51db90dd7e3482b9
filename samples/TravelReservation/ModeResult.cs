namespace Dse.Samples.TravelReservation;

/// <summary>What one cluster (one mode) measured and checked.</summary>
public sealed class ModeResult
{
    /// <summary>Whether the cluster ran speculatively.</summary>
    public required bool Speculative { get; init; }

    /// <summary>Each configuration's measurements, in the order run.</summary>
    public required IReadOnlyList<ConfigurationResult> Configurations { get; init; }

    /// <summary>Processes killed and restarted during the load (<see cref="TravelOptions.Chaos"/>).</summary>
    public required int Kills { get; init; }

    /// <summary>Trips the checker examined (warm-up included).</summary>
    public required int CheckedTrips { get; init; }

    /// <summary>The checker's findings (<see cref="TravelChecker"/>); empty when every rule held.</summary>
    public required IReadOnlyList<string> Violations { get; init; }

    /// <summary>The mode's short name, as in trip ids and result lines: <c>spec</c> or <c>nonspec</c>.</summary>
    public string Name => Speculative ? "spec" : "nonspec";
}
