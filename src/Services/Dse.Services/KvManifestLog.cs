using System.Buffers.Binary;
using System.IO.Hashing;

namespace Dse.Services;

/// <summary>
/// The durable versions of a <see cref="SpeculativeKv"/> as one append-only file, <c>manifests/manifests.log</c>: a record
/// adds a version's manifest, drops the versions above one (a restore) or drops the versions up to one (a prune). A
/// version costs one append and one flush to disk, not a file of its own: creating, renaming and deleting a file per
/// version (a hundred a second at a 10 ms group commit) cost a busy store more CPU than its requests. Once the file
/// passes <see cref="CompactBytes"/>, it is rewritten with the live manifests only (to a temporary file, flushed, renamed
/// into place). Layout in docs/services.md.
/// </summary>
/// <remarks>
/// Reading stops at a torn last record (a crash in the middle of an append; the file is cut back to the records before
/// it) and refuses anything else that does not parse, naming the file and the offset. Manifests of the older
/// one-file-per-version layout are moved into the log when it is opened. Thread-safe.
/// </remarks>
internal sealed class KvManifestLog : IDisposable
{
    public const string FileName = "manifests.log";

    private const uint Magic = 0x4C564B53; // "SKVL" little-endian
    private const int HeaderSize = 4 + 1 + 3 + 4;
    private const int TrailerSize = 4;

    private readonly string _path;
    private readonly Lock _lock = new();
    private readonly SortedList<long, KvManifest> _live;
    private FileStream _file;

    private KvManifestLog(string path, FileStream file, SortedList<long, KvManifest> live)
    {
        _path = path;
        _file = file;
        _live = live;
    }

    private enum Kind : byte
    {
        Manifest = 1,
        DropAbove = 2,
        DropThrough = 3,
    }

    /// <summary>The size past which an append rewrites the file with the live manifests only. 1 MiB; settable for tests.</summary>
    internal long CompactBytes { get; set; } = 1L << 20;

    /// <summary>Runs after an append's writes, before its flush; a test throws from it to stand for a failed write.</summary>
    internal Action? AfterWriteForTest { get; set; }

    /// <summary>How many times the file was rewritten (for tests).</summary>
    internal int Compactions { get; private set; }

    /// <summary>The file's current length in bytes (for tests).</summary>
    internal long Length
    {
        get
        {
            lock (_lock)
            {
                return _file.Length;
            }
        }
    }

    /// <summary>The live manifests, ascending by version: a snapshot.</summary>
    public IReadOnlyList<KvManifest> Live
    {
        get
        {
            lock (_lock)
            {
                return [.. _live.Values];
            }
        }
    }

    /// <summary>Opens (or creates) the log under <paramref name="root"/>, with its live manifests.</summary>
    /// <exception cref="InvalidDataException">A record other than a torn last one, or an older-layout manifest file, is corrupt; the message names the file.</exception>
    public static KvManifestLog Open(string root)
    {
        string dir = KvManifest.DirectoryOf(root);
        Directory.CreateDirectory(dir);
        string path = Path.Combine(dir, FileName);
        var live = new SortedList<long, KvManifest>();
        var legacy = KvManifest.LegacyFiles(root);
        foreach (string file in legacy)
        {
            var manifest = KvManifest.ParseLegacy(File.ReadAllBytes(file), file);
            live[manifest.Version] = manifest;
        }

        var stream = new FileStream(path, FileMode.OpenOrCreate, FileAccess.ReadWrite, FileShare.Read);
        try
        {
            long end = Replay(stream, path, live);
            if (end < stream.Length)
            {
                // A torn last record: never durable, so never acknowledged. Cut it off before appending after it.
                stream.SetLength(end);
                stream.Flush(flushToDisk: true);
            }

            stream.Position = end;
            var log = new KvManifestLog(path, stream, live);
            if (legacy.Length > 0)
            {
                // Move the older layout's manifests into the log (durably), then delete their files.
                log.Add([.. live.Values]);

                foreach (string file in legacy)
                {
                    File.Delete(file);
                }
            }

            return log;
        }
        catch
        {
            stream.Dispose();
            throw;
        }
    }

    /// <summary>Appends the manifests of versions and flushes them to disk at once: the versions are durable when this returns.</summary>
    public void Add(params ReadOnlySpan<KvManifest> manifests)
    {
        var records = new byte[manifests.Length][];
        for (int i = 0; i < manifests.Length; i++)
        {
            records[i] = Record(Kind.Manifest, manifests[i].BodySize, manifests[i].WriteBody);
        }

        var added = manifests.ToArray();
        lock (_lock)
        {
            Append(durable: true, records, () =>
            {
                foreach (var manifest in added)
                {
                    _live[manifest.Version] = manifest;
                }
            });
        }
    }

    /// <summary>Durably forgets every version above <paramref name="version"/> (a restore to it).</summary>
    public void DropAbove(long version)
    {
        var bytes = Record(Kind.DropAbove, 8, s => BinaryPrimitives.WriteInt64LittleEndian(s, version));
        lock (_lock)
        {
            Append(durable: true, [bytes], () => RemoveAbove(_live, version));
        }
    }

    /// <summary>
    /// Forgets every version up to <paramref name="version"/> (a prune). Flushed to disk only when <paramref name="durable"/>:
    /// a pruned version that comes back after a crash is harmless while its checkpoints are still there, so the caller
    /// asks for durability only before it deletes checkpoint files.
    /// </summary>
    public void DropThrough(long version, bool durable)
    {
        var bytes = Record(Kind.DropThrough, 8, s => BinaryPrimitives.WriteInt64LittleEndian(s, version));
        lock (_lock)
        {
            Append(durable, [bytes], () => RemoveThrough(_live, version));
        }
    }

    /// <inheritdoc />
    public void Dispose()
    {
        lock (_lock)
        {
            _file.Dispose();
        }
    }

    /// <summary>
    /// Appends records, flushed to disk when <paramref name="durable"/>, then applies them to the live set. Under the
    /// lock. If the write fails (a full disk), the file is cut back to where it was, so no partial record is left for
    /// later ones to follow, and the live set is unchanged.
    /// </summary>
    private void Append(bool durable, byte[][] records, Action apply)
    {
        long start = _file.Length;
        try
        {
            foreach (var record in records)
            {
                _file.Write(record);
            }

            AfterWriteForTest?.Invoke();
            _file.Flush(flushToDisk: durable);
        }
        catch
        {
            try
            {
                _file.SetLength(start);
                _file.Position = start;
            }
            catch (IOException)
            {
                // The file cannot be cut back either; the partial record is a torn tail only if nothing follows it.
            }

            throw;
        }

        apply();
        if (_file.Length > CompactBytes)
        {
            // The records are in place; a failed rewrite leaves the file as it is, to be tried at the next append.
            try
            {
                Compact();
            }
            catch (IOException)
            {
            }
        }
    }

    /// <summary>Rewrites the file with the live manifests (with the records just appended) only. Under the lock.</summary>
    private void Compact()
    {
        string temporary = _path + ".tmp";
        using (var file = new FileStream(temporary, FileMode.Create, FileAccess.Write, FileShare.None))
        {
            foreach (var manifest in _live.Values)
            {
                file.Write(Record(Kind.Manifest, manifest.BodySize, manifest.WriteBody));
            }

            file.Flush(flushToDisk: true);
        }

        // Until the rename the old file holds the same live set: flushed, it stays right if the rename is lost.
        _file.Flush(flushToDisk: true);
        _file.Dispose();
        try
        {
            File.Move(temporary, _path, overwrite: true);
            Compactions++;
        }
        finally
        {
            _file = new FileStream(_path, FileMode.Open, FileAccess.ReadWrite, FileShare.Read);
            _file.Position = _file.Length;
        }
    }

    private static byte[] Record(Kind kind, int bodySize, SpanAction body)
    {
        var bytes = new byte[HeaderSize + bodySize + TrailerSize];
        var s = bytes.AsSpan();
        BinaryPrimitives.WriteUInt32LittleEndian(s, Magic);
        s[4] = (byte)kind;
        BinaryPrimitives.WriteInt32LittleEndian(s[8..], bodySize);
        body(s.Slice(HeaderSize, bodySize));
        BinaryPrimitives.WriteUInt32LittleEndian(s[^TrailerSize..], Crc32.HashToUInt32(s[..^TrailerSize]));
        return bytes;
    }

    /// <summary>Applies every record to <paramref name="live"/>; returns where the valid records end.</summary>
    private static long Replay(FileStream stream, string path, SortedList<long, KvManifest> live)
    {
        var bytes = new byte[stream.Length];
        stream.Position = 0;
        stream.ReadExactly(bytes);
        var all = bytes.AsSpan();
        int offset = 0;
        while (offset < all.Length)
        {
            var rest = all[offset..];
            int bodySize = rest.Length >= HeaderSize ? BinaryPrimitives.ReadInt32LittleEndian(rest[8..]) : -1;
            bool headerValid = rest.Length >= HeaderSize && BinaryPrimitives.ReadUInt32LittleEndian(rest) == Magic && bodySize >= 0;
            long size = headerValid ? (long)HeaderSize + bodySize + TrailerSize : long.MaxValue;
            if (size > rest.Length)
            {
                if (rest.Length < HeaderSize || headerValid || rest.IndexOfAnyExcept((byte)0) < 0)
                {
                    return offset; // a torn last record
                }

                throw Corrupt(path, offset, "no valid record header");
            }

            var record = rest[..(int)size];
            if (Crc32.HashToUInt32(record[..^TrailerSize]) != BinaryPrimitives.ReadUInt32LittleEndian(record[^TrailerSize..]))
            {
                if (offset + size == all.Length)
                {
                    return offset; // a torn last record
                }

                throw Corrupt(path, offset, "the checksum does not match its contents");
            }

            var body = record.Slice(HeaderSize, bodySize);
            switch ((Kind)record[4])
            {
                case Kind.Manifest:
                    var manifest = KvManifest.ReadBody(body) ?? throw Corrupt(path, offset, "a manifest whose lengths do not add up");
                    live[manifest.Version] = manifest;
                    break;
                case Kind.DropAbove when bodySize == 8:
                    RemoveAbove(live, BinaryPrimitives.ReadInt64LittleEndian(body));
                    break;
                case Kind.DropThrough when bodySize == 8:
                    RemoveThrough(live, BinaryPrimitives.ReadInt64LittleEndian(body));
                    break;
                default:
                    throw Corrupt(path, offset, $"an unknown record kind {record[4]} of {bodySize} bytes");
            }

            offset += (int)size;
        }

        return offset;
    }

    private static InvalidDataException Corrupt(string path, int offset, string what) =>
        new($"SpeculativeKv manifest log '{path}' is corrupt at byte {offset}: {what}.");

    private static void RemoveAbove(SortedList<long, KvManifest> live, long version)
    {
        while (live.Count > 0 && live.Keys[^1] > version)
        {
            live.RemoveAt(live.Count - 1);
        }
    }

    private static void RemoveThrough(SortedList<long, KvManifest> live, long version)
    {
        while (live.Count > 0 && live.Keys[0] <= version)
        {
            live.RemoveAt(0);
        }
    }

    private delegate void SpanAction(Span<byte> span);
}
