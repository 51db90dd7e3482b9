using System.Buffers.Binary;
using System.IO.Hashing;

namespace Dse.Services;

/// <summary>
/// The durable record of one persisted version of a <see cref="SpeculativeKv"/>: which FASTER checkpoints hold it and
/// the runtime metadata. One file per version, <c>manifests/{version:D19}.manifest</c>, written to a temporary file,
/// flushed to disk, then renamed into place. Layout in docs/services.md.
/// </summary>
internal sealed record KvManifest(long Version, Guid IndexToken, Guid LogToken, byte[] Metadata)
{
    private const uint Magic = 0x4D564B53; // "SKVM" little-endian
    private const ushort Format = 1;
    private const int FixedSize = 4 + 2 + 2 + 8 + 16 + 16 + 4;

    public static string DirectoryOf(string root) => Path.Combine(root, "manifests");

    public static string PathOf(string root, long version) => Path.Combine(DirectoryOf(root), $"{version:D19}.manifest");

    /// <summary>Writes the manifest durably (replacing one of the same version left by a rolled-back lineage).</summary>
    public void Write(string root)
    {
        var bytes = new byte[FixedSize + Metadata.Length + 4];
        var s = bytes.AsSpan();
        BinaryPrimitives.WriteUInt32LittleEndian(s, Magic);
        BinaryPrimitives.WriteUInt16LittleEndian(s[4..], Format);
        BinaryPrimitives.WriteInt64LittleEndian(s[8..], Version);
        IndexToken.TryWriteBytes(s[16..]);
        LogToken.TryWriteBytes(s[32..]);
        BinaryPrimitives.WriteInt32LittleEndian(s[48..], Metadata.Length);
        Metadata.CopyTo(s[FixedSize..]);
        BinaryPrimitives.WriteUInt32LittleEndian(s[^4..], Crc32.HashToUInt32(s[..^4]));

        Directory.CreateDirectory(DirectoryOf(root));
        string path = PathOf(root, Version);
        string temporary = path + ".tmp";
        using (var file = new FileStream(temporary, FileMode.Create, FileAccess.Write, FileShare.None))
        {
            file.Write(bytes);
            file.Flush(flushToDisk: true);
        }

        File.Move(temporary, path, overwrite: true);
    }

    /// <summary>Reads every manifest under <paramref name="root"/>, ascending by version.</summary>
    /// <exception cref="InvalidDataException">A manifest is corrupt; the message names the file.</exception>
    public static SortedList<long, KvManifest> ReadAll(string root)
    {
        var result = new SortedList<long, KvManifest>();
        string dir = DirectoryOf(root);
        if (!Directory.Exists(dir))
        {
            return result;
        }

        foreach (string path in Directory.EnumerateFiles(dir, "*.manifest"))
        {
            var manifest = Parse(File.ReadAllBytes(path), path);
            result.Add(manifest.Version, manifest);
        }

        return result;
    }

    /// <summary>Deletes this version's manifest file, if present.</summary>
    public static void Delete(string root, long version) => File.Delete(PathOf(root, version));

    private static KvManifest Parse(ReadOnlySpan<byte> s, string path)
    {
        if (s.Length < FixedSize + 4 || BinaryPrimitives.ReadUInt32LittleEndian(s) != Magic || BinaryPrimitives.ReadUInt16LittleEndian(s[4..]) != Format)
        {
            throw new InvalidDataException($"SpeculativeKv manifest '{path}' ({s.Length} bytes) has no valid header.");
        }

        int metaLength = BinaryPrimitives.ReadInt32LittleEndian(s[48..]);
        if (metaLength < 0 || metaLength != s.Length - FixedSize - 4)
        {
            throw new InvalidDataException($"SpeculativeKv manifest '{path}' claims {metaLength} metadata bytes but holds {s.Length - FixedSize - 4}.");
        }

        if (Crc32.HashToUInt32(s[..^4]) != BinaryPrimitives.ReadUInt32LittleEndian(s[^4..]))
        {
            throw new InvalidDataException($"SpeculativeKv manifest '{path}': the checksum does not match its contents.");
        }

        return new KvManifest(BinaryPrimitives.ReadInt64LittleEndian(s[8..]), new Guid(s.Slice(16, 16)), new Guid(s.Slice(32, 16)), s.Slice(FixedSize, metaLength).ToArray());
    }
}
