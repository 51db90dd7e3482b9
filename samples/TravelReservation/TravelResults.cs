namespace Dse.Samples.TravelReservation;

/// <summary>What a <see cref="TravelRun"/> measured and checked.</summary>
public sealed class TravelResults
{
    /// <summary>The options the run used.</summary>
    public required TravelOptions Options { get; init; }

    /// <summary>The seed of the trips' items and the chaos (given or drawn).</summary>
    public required int Seed { get; init; }

    /// <summary>The speculative cluster's results; null when not run.</summary>
    public ModeResult? Speculative { get; init; }

    /// <summary>The non-speculative cluster's results; null when not run.</summary>
    public ModeResult? NonSpeculative { get; init; }

    /// <summary>Every violation of both clusters, each prefixed with its mode.</summary>
    public IReadOnlyList<string> Violations =>
        new[] { Speculative, NonSpeculative }.OfType<ModeResult>().SelectMany(m => m.Violations.Select(v => $"{m.Name}: {v}")).ToArray();

    /// <summary>Whether the checker found nothing wrong in any cluster.</summary>
    public bool Passed => Violations.Count == 0;
}
