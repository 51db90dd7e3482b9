namespace Dse.Darq;

/// <summary>
/// The outcome of an accepted consume-only step (<see cref="DarqProcessor.ConsumeAsync(long, CancellationToken)"/>): where
/// its completion record went. An 8-byte value, the record's address; the step appended nothing else.
/// </summary>
/// <remarks>
/// A processor that acknowledges messages one at a time awaits one of these per message, so its size matters: a
/// <see cref="ValueTask{TResult}"/> of it is 24 bytes, whose fields the JIT keeps in registers, where the general
/// <see cref="DarqStepResult"/>'s 32-byte task is copied between stack slots as a block right after being written field
/// by field, and each copy waits for those writes (docs/benchmarks.md, darq-step).
/// </remarks>
public readonly record struct DarqConsumeResult
{
    /// <summary>The log footprint of a completion record that consumed one message: the step's only entry.</summary>
    private static readonly int Footprint = DarqEntryFormat.LogFootprint(DarqEntryFormat.CompletionLength(1));

    /// <summary>A result whose completion record is at <paramref name="completionLsn"/>.</summary>
    /// <param name="completionLsn">The completion record's address.</param>
    /// <exception cref="ArgumentOutOfRangeException">The address is negative.</exception>
    public DarqConsumeResult(long completionLsn)
    {
        ArgumentOutOfRangeException.ThrowIfNegative(completionLsn);
        CompletionLsn = completionLsn;
    }

    /// <summary>The address of the step's completion record, its only entry.</summary>
    public long CompletionLsn { get; }

    /// <summary>
    /// The log address that must be committed for the step to be durable (see
    /// <see cref="Darq.WaitForCommitAsync(long, CancellationToken)"/>): the end of the completion record.
    /// </summary>
    public long DurableAt => CompletionLsn + Footprint;

    /// <summary>The same outcome as a general step's result (no SELF or OUT LSNs).</summary>
    /// <returns>The step result.</returns>
    public DarqStepResult ToStepResult() => new([], [], CompletionLsn, DurableAt);

    private bool PrintMembers(System.Text.StringBuilder builder)
    {
        builder.Append("CompletionLsn = ").Append(CompletionLsn).Append(", DurableAt = ").Append(DurableAt);
        return true;
    }
}
