namespace Dse.Functions;

/// <summary>
/// What an entity method may know about its transaction: all of it replay-safe. The same transaction run again (on
/// another node, or by <see cref="SerialEntityRunner"/>) sees the same values.
/// </summary>
public sealed class EntityContext
{
    private readonly ulong _seed;
    private Random? _random;

    internal EntityContext(long tid, long epoch, DateTimeOffset utcNow, ulong seed)
    {
        Tid = tid;
        Epoch = epoch;
        UtcNow = utcNow;
        _seed = seed;
    }

    /// <summary>The transaction's id: its place in the serial order of its epoch.</summary>
    public long Tid { get; }

    /// <summary>The epoch the transaction was sequenced in.</summary>
    public long Epoch { get; }

    /// <summary>The time the transaction's epoch was sequenced: the same for every call of the transaction.</summary>
    public DateTimeOffset UtcNow { get; }

    /// <summary>
    /// A random generator seeded by the transaction and the call's place in its call graph: the same sequence on
    /// every run of this call.
    /// </summary>
    public Random Random => _random ??= new Random(unchecked((int)(_seed ^ (_seed >> 32))));

    /// <summary>A GUID drawn from <see cref="Random"/>: the same on every run of this call.</summary>
    /// <returns>The GUID (version 4 layout).</returns>
    public Guid NewGuid()
    {
        Span<byte> bytes = stackalloc byte[16];
        Random.NextBytes(bytes);
        bytes[7] = (byte)((bytes[7] & 0x0F) | 0x40);
        bytes[8] = (byte)((bytes[8] & 0x3F) | 0x80);
        return new Guid(bytes);
    }
}
