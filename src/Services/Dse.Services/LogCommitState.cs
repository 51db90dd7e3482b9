using System.Buffers.Binary;
using System.IO.Hashing;

namespace Dse.Services;

/// <summary>
/// Everything a <see cref="SpeculativeLog"/> needs to recover without scanning, stored as the FasterLog commit cookie
/// of every commit: the unpruned versions and the rolled-back address ranges (layout in docs/services.md).
/// </summary>
internal sealed class LogCommitState
{
    private const uint Magic = 0x4B434C53; // "SLCK" little-endian
    private const ushort Format = 1;

    /// <summary>Unpruned versions, ascending.</summary>
    public List<LogVersion> Versions { get; } = [];

    /// <summary>Rolled-back address ranges [From, Until), ascending and disjoint.</summary>
    public List<(long From, long Until)> Dropped { get; } = [];

    /// <summary>The address of the last record written by the log itself (commit record or rollback marker), or -1.</summary>
    public long LastRecord { get; set; } = -1;

    public byte[] Serialize()
    {
        int size = 4 + 2 + 2 + 8 + 4 + 4 + (Dropped.Count * 16) + 4;
        foreach (var v in Versions)
        {
            size += 36 + v.Metadata.Length;
        }

        var buffer = new byte[size];
        var s = buffer.AsSpan();
        BinaryPrimitives.WriteUInt32LittleEndian(s, Magic);
        BinaryPrimitives.WriteUInt16LittleEndian(s[4..], Format);
        BinaryPrimitives.WriteInt64LittleEndian(s[8..], LastRecord);
        BinaryPrimitives.WriteInt32LittleEndian(s[16..], Versions.Count);
        int at = 20;
        foreach (var v in Versions)
        {
            BinaryPrimitives.WriteInt64LittleEndian(s[at..], v.Version);
            BinaryPrimitives.WriteInt64LittleEndian(s[(at + 8)..], v.RecordAddress);
            BinaryPrimitives.WriteInt64LittleEndian(s[(at + 16)..], v.EndAddress);
            BinaryPrimitives.WriteInt64LittleEndian(s[(at + 24)..], v.LogicalBegin);
            BinaryPrimitives.WriteInt32LittleEndian(s[(at + 32)..], v.Metadata.Length);
            v.Metadata.CopyTo(s[(at + 36)..]);
            at += 36 + v.Metadata.Length;
        }

        BinaryPrimitives.WriteInt32LittleEndian(s[at..], Dropped.Count);
        at += 4;
        foreach (var (from, until) in Dropped)
        {
            BinaryPrimitives.WriteInt64LittleEndian(s[at..], from);
            BinaryPrimitives.WriteInt64LittleEndian(s[(at + 8)..], until);
            at += 16;
        }

        BinaryPrimitives.WriteUInt32LittleEndian(s[at..], Crc32.HashToUInt32(s[..at]));
        return buffer;
    }

    /// <exception cref="InvalidDataException">The cookie is not a valid state; the message says why.</exception>
    public static LogCommitState Deserialize(ReadOnlySpan<byte> s, string where)
    {
        if (s.Length < 28 || BinaryPrimitives.ReadUInt32LittleEndian(s) != Magic || BinaryPrimitives.ReadUInt16LittleEndian(s[4..]) != Format)
        {
            throw new InvalidDataException($"{where}: the commit cookie ({s.Length} bytes) is not a SpeculativeLog state.");
        }

        if (Crc32.HashToUInt32(s[..^4]) != BinaryPrimitives.ReadUInt32LittleEndian(s[^4..]))
        {
            throw new InvalidDataException($"{where}: the commit cookie's checksum does not match its contents.");
        }

        try
        {
            var state = new LogCommitState { LastRecord = BinaryPrimitives.ReadInt64LittleEndian(s[8..]) };
            int count = BinaryPrimitives.ReadInt32LittleEndian(s[16..]);
            int at = 20;
            for (int i = 0; i < count; i++)
            {
                int metaLength = BinaryPrimitives.ReadInt32LittleEndian(s[(at + 32)..]);
                state.Versions.Add(new LogVersion(
                    BinaryPrimitives.ReadInt64LittleEndian(s[at..]),
                    BinaryPrimitives.ReadInt64LittleEndian(s[(at + 8)..]),
                    BinaryPrimitives.ReadInt64LittleEndian(s[(at + 16)..]),
                    BinaryPrimitives.ReadInt64LittleEndian(s[(at + 24)..]),
                    s.Slice(at + 36, metaLength).ToArray()));
                at += 36 + metaLength;
            }

            int dropped = BinaryPrimitives.ReadInt32LittleEndian(s[at..]);
            at += 4;
            for (int i = 0; i < dropped; i++)
            {
                state.Dropped.Add((BinaryPrimitives.ReadInt64LittleEndian(s[at..]), BinaryPrimitives.ReadInt64LittleEndian(s[(at + 8)..])));
                at += 16;
            }

            return state;
        }
        catch (ArgumentOutOfRangeException e)
        {
            throw new InvalidDataException($"{where}: the commit cookie is truncated.", e);
        }
    }
}

/// <summary>A persisted version of a <see cref="SpeculativeLog"/>.</summary>
/// <param name="Version">The version number.</param>
/// <param name="RecordAddress">The address of its commit record.</param>
/// <param name="EndAddress">The log tail right after its commit record: where a restore of it drops from.</param>
/// <param name="LogicalBegin">The logical begin (truncation point) of the log at this version.</param>
/// <param name="Metadata">The runtime metadata.</param>
internal sealed record LogVersion(long Version, long RecordAddress, long EndAddress, long LogicalBegin, byte[] Metadata);
