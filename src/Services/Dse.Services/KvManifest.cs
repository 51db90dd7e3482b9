using System.Buffers.Binary;
using System.IO.Hashing;

namespace Dse.Services;

/// <summary>
/// The durable record of one persisted version of a <see cref="SpeculativeKv"/>: which FASTER checkpoints hold it, the
/// hybrid-log checkpoint's own metadata (FASTER's description of the log at the checkpoint) and the runtime metadata.
/// Kept as records of <see cref="KvManifestLog"/>; layout in docs/services.md.
/// </summary>
/// <param name="Version">The runtime's version number.</param>
/// <param name="IndexToken">FASTER's index checkpoint the version recovers with.</param>
/// <param name="LogToken">FASTER's hybrid-log checkpoint holding the version's state.</param>
/// <param name="Metadata">The runtime's metadata of the version.</param>
/// <param name="LogMetadata">
/// FASTER's commit metadata of the hybrid-log checkpoint. Empty for a manifest written by the one-file-per-version
/// layout, whose log checkpoint metadata is in FASTER's own directory under <c>checkpoints/</c>.
/// </param>
internal sealed record KvManifest(long Version, Guid IndexToken, Guid LogToken, byte[] Metadata, byte[] LogMetadata)
{
    private const uint Magic = 0x4D564B53; // "SKVM" little-endian
    private const ushort LegacyFormat = 1;
    private const int LegacyFixedSize = 4 + 2 + 2 + 8 + 16 + 16 + 4;

    /// <summary>The directory holding the manifest log (and, from the older layout, one file per version).</summary>
    public static string DirectoryOf(string root) => Path.Combine(root, "manifests");

    /// <summary>The size of this manifest as a record body (see <see cref="WriteBody"/>).</summary>
    public int BodySize => 8 + 16 + 16 + 4 + Metadata.Length + 4 + LogMetadata.Length;

    /// <summary>Writes the body of a manifest record: <c>i64 version | index token | log token | i32 n | metadata | i32 m | log metadata</c>.</summary>
    public void WriteBody(Span<byte> s)
    {
        BinaryPrimitives.WriteInt64LittleEndian(s, Version);
        IndexToken.TryWriteBytes(s[8..]);
        LogToken.TryWriteBytes(s[24..]);
        BinaryPrimitives.WriteInt32LittleEndian(s[40..], Metadata.Length);
        Metadata.CopyTo(s[44..]);
        int at = 44 + Metadata.Length;
        BinaryPrimitives.WriteInt32LittleEndian(s[at..], LogMetadata.Length);
        LogMetadata.CopyTo(s[(at + 4)..]);
    }

    /// <summary>Reads a manifest record's body; null when its lengths do not add up to the body's size.</summary>
    public static KvManifest? ReadBody(ReadOnlySpan<byte> s)
    {
        if (s.Length < 48)
        {
            return null;
        }

        int metaLength = BinaryPrimitives.ReadInt32LittleEndian(s[40..]);
        if (metaLength < 0 || metaLength > s.Length - 48)
        {
            return null;
        }

        int at = 44 + metaLength;
        int logLength = BinaryPrimitives.ReadInt32LittleEndian(s[at..]);
        if (logLength < 0 || logLength != s.Length - at - 4)
        {
            return null;
        }

        return new KvManifest(
            BinaryPrimitives.ReadInt64LittleEndian(s),
            new Guid(s.Slice(8, 16)),
            new Guid(s.Slice(24, 16)),
            s.Slice(44, metaLength).ToArray(),
            s.Slice(at + 4, logLength).ToArray());
    }

    /// <summary>The one-file-per-version manifests of the older layout (<c>manifests/{version:D19}.manifest</c>).</summary>
    public static string[] LegacyFiles(string root)
    {
        string dir = DirectoryOf(root);
        return Directory.Exists(dir) ? Directory.GetFiles(dir, "*.manifest") : [];
    }

    /// <summary>Parses a manifest file of the older layout (format 1); its log checkpoint metadata is in FASTER's directory.</summary>
    /// <exception cref="InvalidDataException">The file is corrupt; the message names it.</exception>
    public static KvManifest ParseLegacy(ReadOnlySpan<byte> s, string path)
    {
        if (s.Length < LegacyFixedSize + 4 || BinaryPrimitives.ReadUInt32LittleEndian(s) != Magic || BinaryPrimitives.ReadUInt16LittleEndian(s[4..]) != LegacyFormat)
        {
            throw new InvalidDataException($"SpeculativeKv manifest '{path}' ({s.Length} bytes) has no valid header.");
        }

        int metaLength = BinaryPrimitives.ReadInt32LittleEndian(s[48..]);
        if (metaLength < 0 || metaLength != s.Length - LegacyFixedSize - 4)
        {
            throw new InvalidDataException($"SpeculativeKv manifest '{path}' claims {metaLength} metadata bytes but holds {s.Length - LegacyFixedSize - 4}.");
        }

        if (Crc32.HashToUInt32(s[..^4]) != BinaryPrimitives.ReadUInt32LittleEndian(s[^4..]))
        {
            throw new InvalidDataException($"SpeculativeKv manifest '{path}': the checksum does not match its contents.");
        }

        return new KvManifest(BinaryPrimitives.ReadInt64LittleEndian(s[8..]), new Guid(s.Slice(16, 16)), new Guid(s.Slice(32, 16)), s.Slice(LegacyFixedSize, metaLength).ToArray(), []);
    }
}
