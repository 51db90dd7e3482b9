using System.Buffers.Binary;

namespace Dse.Coordinator;

/// <summary>
/// The <see cref="ClusterCoordinator"/>'s journal over an <see cref="ICoordinatorLog"/>: encodes each
/// <see cref="ClusterJournalEntry"/> as one log record (docs/coordinator-log-format.md, "Journal entries").
/// </summary>
public sealed class CoordinatorJournal : IClusterJournal
{
    /// <summary>The version byte every entry starts with.</summary>
    internal const byte FormatVersion = 1;

    private const byte Started = 1;
    private const byte Registered = 2;
    private const byte Decided = 3;
    private const byte Acknowledged = 4;

    private readonly ICoordinatorLog _log;

    private CoordinatorJournal(ICoordinatorLog log) => _log = log;

    /// <summary>The log underneath, for its description and its count of durable appends.</summary>
    public ICoordinatorLog Log => _log;

    /// <summary>Opens (and fences) <paramref name="log"/> and decodes every entry it holds.</summary>
    /// <exception cref="InvalidDataException">A record is not a valid journal entry; the message names its index.</exception>
    /// <exception cref="CoordinatorLogFencedException">Another coordinator incarnation holds the log.</exception>
    public static async Task<(CoordinatorJournal Journal, IReadOnlyList<ClusterJournalEntry> Recovered)> OpenAsync(ICoordinatorLog log, CancellationToken cancellationToken = default)
    {
        ArgumentNullException.ThrowIfNull(log);
        var records = await log.OpenAsync(cancellationToken).ConfigureAwait(false);
        var entries = new List<ClusterJournalEntry>(records.Count);
        for (int i = 0; i < records.Count; i++)
        {
            entries.Add(Decode(records[i].Span, i, log.Description));
        }

        return (new CoordinatorJournal(log), entries);
    }

    /// <inheritdoc />
    public async ValueTask AppendAsync(ClusterJournalEntry entry, CancellationToken cancellationToken = default) =>
        await _log.AppendAsync(Encode(entry), cancellationToken).ConfigureAwait(false);

    /// <summary>Encodes one entry.</summary>
    public static byte[] Encode(ClusterJournalEntry entry)
    {
        ArgumentNullException.ThrowIfNull(entry);
        switch (entry)
        {
            case CoordinatorStartedEntry started:
                return Fixed(Started, started.Incarnation);
            case ParticipantRegisteredEntry registered:
                return Fixed(Registered, registered.ObjectId);
            case RollbackAcknowledgedEntry ack:
                return Fixed(Acknowledged, ack.ObjectId, ack.WorldLine, ack.KeptThrough);
            case RollbackDecidedEntry { Decision: var decision }:
                var cut = decision.Cut.OrderBy(kv => kv.Key).ToArray();
                var bytes = new byte[2 + 8 + 8 + 1 + 4 + (cut.Length * 16)];
                bytes[0] = FormatVersion;
                bytes[1] = Decided;
                var span = bytes.AsSpan(2);
                BinaryPrimitives.WriteInt64LittleEndian(span, decision.WorldLine);
                BinaryPrimitives.WriteInt64LittleEndian(span[8..], decision.FailedObjectId);
                span[16] = (byte)decision.Reason;
                BinaryPrimitives.WriteInt32LittleEndian(span[17..], cut.Length);
                int offset = 21;
                foreach (var (id, version) in cut)
                {
                    BinaryPrimitives.WriteInt64LittleEndian(span[offset..], id);
                    BinaryPrimitives.WriteInt64LittleEndian(span[(offset + 8)..], version);
                    offset += 16;
                }

                return bytes;
            default:
                throw new ArgumentException($"Unknown journal entry type {entry.GetType().Name}.", nameof(entry));
        }
    }

    /// <summary>Decodes one entry.</summary>
    /// <exception cref="InvalidDataException">The bytes are not a valid entry.</exception>
    public static ClusterJournalEntry Decode(ReadOnlySpan<byte> record, int index = 0, string description = "the journal")
    {
        if (record.Length < 2)
        {
            throw Invalid(index, description, $"{record.Length} bytes, shorter than the 2-byte entry header");
        }

        if (record[0] != FormatVersion)
        {
            throw Invalid(index, description, $"format version {record[0]}, but this coordinator reads version {FormatVersion}");
        }

        var body = record[2..];
        switch (record[1])
        {
            case Started:
                return new CoordinatorStartedEntry(ReadFixed(body, 1, index, description)[0]);
            case Registered:
                return new ParticipantRegisteredEntry(ReadFixed(body, 1, index, description)[0]);
            case Acknowledged:
                var ack = ReadFixed(body, 3, index, description);
                return new RollbackAcknowledgedEntry(ack[0], ack[1], ack[2]);
            case Decided:
                if (body.Length < 21)
                {
                    throw Invalid(index, description, $"a decision of {body.Length} body bytes, shorter than its 21-byte header");
                }

                long worldLine = BinaryPrimitives.ReadInt64LittleEndian(body);
                long failed = BinaryPrimitives.ReadInt64LittleEndian(body[8..]);
                byte reason = body[16];
                int count = BinaryPrimitives.ReadInt32LittleEndian(body[17..]);
                if (count < 0 || body.Length != 21 + ((long)count * 16))
                {
                    throw Invalid(index, description, $"a decision listing {count} participants in {body.Length} body bytes");
                }

                if (worldLine <= 0 || reason > (byte)RollbackReason.ColdStart)
                {
                    throw Invalid(index, description, $"a decision with world-line {worldLine} and reason {reason}");
                }

                // A cold start names no failed participant and only a cold start does: anything else contradicts itself.
                if (failed < RollbackDecision.ColdStart || (failed == RollbackDecision.ColdStart) != (reason == (byte)RollbackReason.ColdStart))
                {
                    throw Invalid(index, description, $"a decision with failed participant {failed} and reason {(RollbackReason)reason}");
                }

                var cut = new Dictionary<long, long>(count);
                for (int i = 0; i < count; i++)
                {
                    var pair = body.Slice(21 + (i * 16), 16);
                    if (!cut.TryAdd(BinaryPrimitives.ReadInt64LittleEndian(pair), BinaryPrimitives.ReadInt64LittleEndian(pair[8..])))
                    {
                        throw Invalid(index, description, "a decision listing one participant twice");
                    }
                }

                return new RollbackDecidedEntry(new RollbackDecision(worldLine, failed, cut, (RollbackReason)reason));
            default:
                throw Invalid(index, description, $"unknown entry type {record[1]}");
        }
    }

    private static byte[] Fixed(byte type, params ReadOnlySpan<long> values)
    {
        var bytes = new byte[2 + (values.Length * 8)];
        bytes[0] = FormatVersion;
        bytes[1] = type;
        for (int i = 0; i < values.Length; i++)
        {
            BinaryPrimitives.WriteInt64LittleEndian(bytes.AsSpan(2 + (i * 8)), values[i]);
        }

        return bytes;
    }

    private static long[] ReadFixed(ReadOnlySpan<byte> body, int count, int index, string description)
    {
        if (body.Length != count * 8)
        {
            throw Invalid(index, description, $"{body.Length} body bytes where {count * 8} were expected");
        }

        var values = new long[count];
        for (int i = 0; i < count; i++)
        {
            values[i] = BinaryPrimitives.ReadInt64LittleEndian(body[(i * 8)..]);
        }

        return values;
    }

    private static InvalidDataException Invalid(int index, string description, string problem) =>
        new($"Record {index} of coordinator log {description} is not a valid journal entry: {problem}.");
}
