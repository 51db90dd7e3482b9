namespace Dse.Darq;

/// <summary>
/// The outcome of an accepted step: where its entries went. A 16-byte value: a step that appends nothing but its
/// completion record (a consume-only step) allocates nothing for it; a step that appends SELF or OUT messages keeps their
/// LSN lists in one small object.
/// </summary>
/// <remarks>
/// The size matters on the step path. A processor awaits a <see cref="ValueTask{TResult}"/> of this type for every step,
/// and the JIT copies that task between stack slots as a block right after writing it field by field, so each copy waits
/// for the writes: the smaller the task, the fewer such copies (docs/benchmarks.md, darq-step).
/// </remarks>
public readonly record struct DarqStepResult
{
    /// <summary>FASTER's logical addresses fit in 48 bits; a completion-only result keeps its address there.</summary>
    private const int AddressBits = 48;

    private const long AddressMask = (1L << AddressBits) - 1;

    /// <summary>The largest completion-record footprint the packed form holds (the top 16 bits).</summary>
    private const long MaxPackedFootprint = (1L << (64 - AddressBits)) - 1;

    /// <summary>The lists and addresses, when the step appended SELF or OUT messages or the packed form does not fit; else null.</summary>
    private readonly Detail? _detail;

    /// <summary>Without <see cref="_detail"/>: the completion LSN in the low 48 bits, its footprint (DurableAt - CompletionLsn) in the top 16.</summary>
    private readonly long _packed;

    /// <summary>A result with the given lists and addresses.</summary>
    /// <param name="selfLsns">The log sequence numbers of the step's SELF messages, in the order given.</param>
    /// <param name="outLsns">The log sequence numbers of the step's OUT messages, in the order given.</param>
    /// <param name="completionLsn">The address of the step's completion record, its last entry.</param>
    /// <param name="durableAt">The log address that must be committed for the step to be durable.</param>
    /// <exception cref="ArgumentNullException">A list is null.</exception>
    public DarqStepResult(IReadOnlyList<long> selfLsns, IReadOnlyList<long> outLsns, long completionLsn, long durableAt)
    {
        ArgumentNullException.ThrowIfNull(selfLsns);
        ArgumentNullException.ThrowIfNull(outLsns);
        if (selfLsns.Count == 0 && outLsns.Count == 0 && Packs(completionLsn, durableAt))
        {
            _packed = Pack(completionLsn, durableAt);
        }
        else
        {
            _detail = new Detail(selfLsns, outLsns, completionLsn, durableAt);
        }
    }

    private DarqStepResult(long packed) => _packed = packed;

    /// <summary>The log sequence numbers of the step's SELF messages, in the order given.</summary>
    public IReadOnlyList<long> SelfLsns => _detail?.SelfLsns ?? [];

    /// <summary>The log sequence numbers of the step's OUT messages, in the order given.</summary>
    public IReadOnlyList<long> OutLsns => _detail?.OutLsns ?? [];

    /// <summary>The address of the step's completion record, its last entry.</summary>
    public long CompletionLsn => _detail?.CompletionLsn ?? _packed & AddressMask;

    /// <summary>The log address that must be committed for the step to be durable (see <see cref="Darq.WaitForCommitAsync(long, CancellationToken)"/>).</summary>
    public long DurableAt => _detail?.DurableAt ?? (_packed & AddressMask) + (long)((ulong)_packed >> AddressBits);

    /// <summary>Gives the four parts: the SELF and OUT LSNs, the completion LSN and the address to await.</summary>
    /// <param name="selfLsns">The SELF messages' LSNs.</param>
    /// <param name="outLsns">The OUT messages' LSNs.</param>
    /// <param name="completionLsn">The completion record's address.</param>
    /// <param name="durableAt">The address to await for durability.</param>
    public void Deconstruct(out IReadOnlyList<long> selfLsns, out IReadOnlyList<long> outLsns, out long completionLsn, out long durableAt)
    {
        selfLsns = SelfLsns;
        outLsns = OutLsns;
        completionLsn = CompletionLsn;
        durableAt = DurableAt;
    }

    /// <summary>The result of a step that appended nothing but its completion record, without allocating when it packs.</summary>
    internal static DarqStepResult Completion(long completionLsn, long durableAt)
        => Packs(completionLsn, durableAt) ? new DarqStepResult(Pack(completionLsn, durableAt)) : new DarqStepResult([], [], completionLsn, durableAt);

    private static bool Packs(long completionLsn, long durableAt)
        => (ulong)completionLsn <= AddressMask && durableAt >= completionLsn && durableAt - completionLsn <= MaxPackedFootprint;

    private static long Pack(long completionLsn, long durableAt) => completionLsn | ((durableAt - completionLsn) << AddressBits);

    /// <summary>Equal when the addresses are equal and the lists hold the same LSNs in the same order.</summary>
    /// <param name="other">The other result.</param>
    /// <returns>Whether the two describe the same step placement.</returns>
    public bool Equals(DarqStepResult other)
        => CompletionLsn == other.CompletionLsn && DurableAt == other.DurableAt && SelfLsns.SequenceEqual(other.SelfLsns) &&
           OutLsns.SequenceEqual(other.OutLsns);

    /// <inheritdoc/>
    public override int GetHashCode() => HashCode.Combine(CompletionLsn, DurableAt, SelfLsns.Count, OutLsns.Count);

    private bool PrintMembers(System.Text.StringBuilder builder)
    {
        builder.Append("SelfLsns = [").AppendJoin(", ", SelfLsns).Append("], OutLsns = [").AppendJoin(", ", OutLsns)
            .Append("], CompletionLsn = ").Append(CompletionLsn).Append(", DurableAt = ").Append(DurableAt);
        return true;
    }

    private sealed record Detail(IReadOnlyList<long> SelfLsns, IReadOnlyList<long> OutLsns, long CompletionLsn, long DurableAt);
}
