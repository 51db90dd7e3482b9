namespace Dse.Darq;

/// <summary>
/// When a processor's automatic checkpoint runs (<see cref="DarqProcessor.EnableAutoCheckpoint(DarqCheckpointPolicy, DarqSnapshot)"/>):
/// after a step through the processor that reaches any threshold set here. At least one must be set; validated when
/// enabled.
/// </summary>
/// <remarks>
/// The SELF thresholds look at the DARQ's unconsumed plain SELF messages (<see cref="Darq.UnconsumedSelfCount"/>,
/// <see cref="Darq.UnconsumedSelfBytes"/>; activities are not counted), read in O(1) after each step. A snapshot that
/// itself reaches a SELF threshold makes every step checkpoint; set the thresholds above the snapshot's size.
/// </remarks>
public sealed class DarqCheckpointPolicy
{
    /// <summary>
    /// Checkpoint after this many steps through the processor since the last attempt (a batch counts as its number of
    /// steps). Default <see langword="null"/>: not by steps. At least 1 when set.
    /// </summary>
    public int? EverySteps { get; init; }

    /// <summary>
    /// Checkpoint after a step that leaves at least this many unconsumed plain SELF messages. Default <see langword="null"/>:
    /// not by count. At least 1 when set.
    /// </summary>
    public int? MaxSelfMessages { get; init; }

    /// <summary>
    /// Checkpoint after a step that leaves unconsumed plain SELF payloads of at least this many bytes in all. Default
    /// <see langword="null"/>: not by size. At least 1 when set.
    /// </summary>
    public long? MaxSelfBytes { get; init; }

    /// <summary>Throws, naming the property, unless at least one threshold is set and each set one is at least 1.</summary>
    /// <exception cref="ArgumentException">No threshold is set, or one is below 1.</exception>
    internal void Validate()
    {
        if (EverySteps is null && MaxSelfMessages is null && MaxSelfBytes is null)
        {
            throw new ArgumentException(
                $"A checkpoint policy needs at least one threshold: set {nameof(EverySteps)}, {nameof(MaxSelfMessages)} or {nameof(MaxSelfBytes)}.", "policy");
        }

        if (EverySteps < 1)
        {
            throw new ArgumentException($"{nameof(DarqCheckpointPolicy)}.{nameof(EverySteps)} is {EverySteps}; it must be at least 1 (or unset).", "policy");
        }

        if (MaxSelfMessages < 1)
        {
            throw new ArgumentException($"{nameof(DarqCheckpointPolicy)}.{nameof(MaxSelfMessages)} is {MaxSelfMessages}; it must be at least 1 (or unset).", "policy");
        }

        if (MaxSelfBytes < 1)
        {
            throw new ArgumentException($"{nameof(DarqCheckpointPolicy)}.{nameof(MaxSelfBytes)} is {MaxSelfBytes}; it must be at least 1 (or unset).", "policy");
        }
    }

    /// <summary>Which threshold, if any, <paramref name="steps"/> steps and the DARQ's SELF counters reach; null when none.</summary>
    internal string? Reached(long steps, int selfCount, long selfBytes)
        => steps >= EverySteps ? nameof(EverySteps)
            : selfCount >= MaxSelfMessages ? nameof(MaxSelfMessages)
            : selfBytes >= MaxSelfBytes ? nameof(MaxSelfBytes)
            : null;
}
