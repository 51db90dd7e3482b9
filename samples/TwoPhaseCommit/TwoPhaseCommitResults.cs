namespace Dse.Samples.TwoPhaseCommit;

/// <summary>The results of a <see cref="TwoPhaseCommitRun"/>: one <see cref="ModeResults"/> per mode run.</summary>
public sealed class TwoPhaseCommitResults
{
    /// <summary>The options the run used.</summary>
    public required TwoPhaseCommitOptions Options { get; init; }

    /// <summary>The chaos seed used (also when chaos was off).</summary>
    public required int Seed { get; init; }

    /// <summary>The speculative run, if performed.</summary>
    public ModeResults? Speculative { get; init; }

    /// <summary>The non-speculative run, if performed.</summary>
    public ModeResults? NonSpeculative { get; init; }

    /// <summary>Speculative mean / non-speculative mean commit latency; NaN unless both ran.</summary>
    public double Ratio => Speculative is { } s && NonSpeculative is { } n ? s.MeanMs / n.MeanMs : double.NaN;

    /// <summary>Whether every run passed the atomicity checks.</summary>
    public bool Passed => Clean(Speculative) && Clean(NonSpeculative);

    private static bool Clean(ModeResults? mode) => mode is null || (mode.Violations.Count == 0 && mode.ForgedHeaders.All(f => f.AsExpected));
}
