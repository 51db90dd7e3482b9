using System.Buffers.Binary;
using System.IO.Hashing;
using System.Text;
using Dse.Services.Tests.Support;
using FASTER.core;

namespace Dse.Services.Tests;

/// <summary>The manifest log of a <see cref="SpeculativeKv"/>: one file of records instead of a file per version.</summary>
public class KvManifestLogTests
{
    private static KvManifest Manifest(long version, Guid? index = null) =>
        new(version, index ?? Guid.NewGuid(), Guid.NewGuid(), Encoding.UTF8.GetBytes($"meta {version}"), Encoding.UTF8.GetBytes($"faster log {version}"));

    private static string LogPath(string root) => Path.Combine(root, "manifests", KvManifestLog.FileName);

    /// <summary>Opens the log under <paramref name="root"/>, adds the versions' manifests one append each, and closes it.</summary>
    private static void AddVersions(string root, params long[] versions)
    {
        var log = KvManifestLog.Open(root);
        using (log)
        {
            foreach (long version in versions)
            {
                log.Add(Manifest(version));
            }
        }
    }

    /// <summary>The versions a reopened log lists.</summary>
    private static long[] Reopen(string root)
    {
        using var log = KvManifestLog.Open(root);
        return [.. log.Live.Select(m => m.Version)];
    }

    private static void AppendBytes(string root, byte[] bytes)
    {
        using var file = new FileStream(LogPath(root), FileMode.Append);
        file.Write(bytes);
    }

    [Fact]
    public void Records_ReplayedOnOpen_AddsDropsAndPrunesInOrder()
    {
        using var dir = new TempDirectory();
        var log = KvManifestLog.Open(dir.Path);
        Assert.Empty(log.Live);
        using (log)
        {
            for (long v = 1; v <= 6; v++)
            {
                log.Add(Manifest(v));
            }

            log.DropAbove(4);          // a restore to 4 forgets 5 and 6
            log.Add(Manifest(5));      // the new lineage's 5
            log.DropThrough(2, durable: false);
        }

        var again = KvManifestLog.Open(dir.Path);
        var replayed = again.Live.ToDictionary(m => m.Version);
        using (again)
        {
            Assert.Equal([3L, 4, 5], again.Live.Select(m => m.Version));
            Assert.Equal("faster log 5", Encoding.UTF8.GetString(replayed[5].LogMetadata));
            Assert.Equal("meta 3", Encoding.UTF8.GetString(replayed[3].Metadata));
        }
    }

    [Fact]
    public void TornLastRecord_IsCutOffAndTheLogAppendsAfterTheGoodOnes()
    {
        using var dir = new TempDirectory();
        AddVersions(dir.Path, 1, 2);

        // A crash in the middle of appending version 3: its header made it, the rest did not.
        long good = new FileInfo(LogPath(dir.Path)).Length;
        var partial = new byte[30];
        BinaryPrimitives.WriteUInt32LittleEndian(partial, 0x4C564B53);
        partial[4] = 1;
        BinaryPrimitives.WriteInt32LittleEndian(partial.AsSpan(8), 200);
        AppendBytes(dir.Path, partial);

        Assert.Equal([1L, 2], Reopen(dir.Path));
        Assert.Equal(good, new FileInfo(LogPath(dir.Path)).Length);
        AddVersions(dir.Path, 3);
        Assert.Equal([1L, 2, 3], Reopen(dir.Path));
    }

    [Fact]
    public void ZerosAfterTheLastRecord_AreATornTail()
    {
        using var dir = new TempDirectory();
        AddVersions(dir.Path, 1);
        AppendBytes(dir.Path, new byte[64]);
        Assert.Equal([1L], Reopen(dir.Path));
    }

    [Theory]
    [InlineData(0, "no valid record header")]                 // the first record's magic, with records after it
    [InlineData(30, "the checksum does not match its contents")]  // inside the first record's body
    public void CorruptRecordBeforeOthers_IsRefusedNamingFileAndOffset(int offset, string what)
    {
        using var dir = new TempDirectory();
        AddVersions(dir.Path, 1, 2);

        var bytes = File.ReadAllBytes(LogPath(dir.Path));
        bytes[offset] ^= 0x5A;
        File.WriteAllBytes(LogPath(dir.Path), bytes);

        var ex = Assert.Throws<InvalidDataException>(() => KvManifestLog.Open(dir.Path));
        Assert.Contains(LogPath(dir.Path), ex.Message, StringComparison.Ordinal);
        Assert.Contains("at byte 0", ex.Message, StringComparison.Ordinal);
        Assert.Contains(what, ex.Message, StringComparison.Ordinal);
    }

    [Fact]
    public void UnknownRecordKind_IsRefused()
    {
        using var dir = new TempDirectory();
        AddVersions(dir.Path, 1);

        // A well-formed record (valid checksum) of a kind this version does not know, followed by another record.
        var record = new byte[12 + 8 + 4];
        BinaryPrimitives.WriteUInt32LittleEndian(record, 0x4C564B53);
        record[4] = 9;
        BinaryPrimitives.WriteInt32LittleEndian(record.AsSpan(8), 8);
        BinaryPrimitives.WriteUInt32LittleEndian(record.AsSpan(20), Crc32.HashToUInt32(record.AsSpan(0, 20)));
        var existing = File.ReadAllBytes(LogPath(dir.Path));
        File.WriteAllBytes(LogPath(dir.Path), [.. record, .. existing]);

        var ex = Assert.Throws<InvalidDataException>(() => KvManifestLog.Open(dir.Path));
        Assert.Contains("unknown record kind 9", ex.Message, StringComparison.Ordinal);
    }

    [Fact]
    public void FailedAppend_CutsTheFileBackAndChangesNothing()
    {
        using var dir = new TempDirectory();
        AddVersions(dir.Path, 1, 2);
        long before = new FileInfo(LogPath(dir.Path)).Length;
        var log = KvManifestLog.Open(dir.Path);
        using (log)
        {
            log.AfterWriteForTest = () => throw new IOException("No space left on device");
            Assert.Throws<IOException>(() => log.Add(Manifest(3)));
            Assert.Throws<IOException>(() => log.DropThrough(1, durable: true));
            Assert.Equal(before, log.Length);

            log.AfterWriteForTest = null;
            log.Add(Manifest(4));
        }

        // Version 3 was never durable and version 1 never dropped; nothing partial sits between the records.
        Assert.Equal([1L, 2, 4], Reopen(dir.Path));
    }

    [Fact]
    public void PastTheCompactionSize_TheFileIsRewrittenWithTheLiveManifestsOnly()
    {
        using var dir = new TempDirectory();
        var log = KvManifestLog.Open(dir.Path);
        using (log)
        {
            log.CompactBytes = 4096;
            for (long v = 1; v <= 200; v++)
            {
                log.Add(Manifest(v));
                log.DropThrough(v - 3, durable: false);
            }

            Assert.True(log.Compactions > 0);
            Assert.True(log.Length <= 4096 + 200, $"length {log.Length}");
        }

        Assert.Equal([198L, 199, 200], Reopen(dir.Path));

        Assert.False(File.Exists(LogPath(dir.Path) + ".tmp"));
    }

    [Fact]
    [Trait("Category", "Recovery")]
    public async Task OlderLayout_OneFilePerVersion_IsMovedIntoTheLogAndRecovers()
    {
        using var h = new KvHarness();
        var coordinator = new ClusterCoordinator();
        var kv = await h.OpenAsync(coordinator);
        await kv.StartLocalActionAsync();
        await kv.PutAsync(Encoding.UTF8.GetBytes("k"), Encoding.UTF8.GetBytes("v"));
        kv.EndAction();
        await kv.AdvanceVersionAsync();
        await kv.WaitForCommitAsync(kv.CurrentVersion - 1, kv.WorldLine);
        await kv.DisposeAsync();

        // Rewrite the directory in the older layout: a manifest file per version, the log checkpoint's metadata in
        // FASTER's own directory.
        var log = KvManifestLog.Open(h.Directory);
        var live = log.Live;
        log.Dispose();
        Assert.NotEmpty(live);
        using (var faster = new DeviceLogCommitCheckpointManager(
            new LocalStorageNamedDeviceFactory(), new DefaultCheckpointNamingScheme(Path.Combine(h.Directory, "checkpoints")), removeOutdated: false))
        {
            foreach (var m in live)
            {
                faster.CommitLogCheckpoint(m.LogToken, m.LogMetadata);
                File.WriteAllBytes(Path.Combine(h.Directory, "manifests", $"{m.Version:D19}.manifest"), LegacyManifest(m));
            }
        }

        File.Delete(LogPath(h.Directory));

        await using var kv2 = await h.OpenAsync(coordinator);
        await kv2.StartLocalActionAsync();
        Assert.Equal("v", Encoding.UTF8.GetString((await kv2.GetAsync(Encoding.UTF8.GetBytes("k")))!));
        kv2.EndAction();
        Assert.Empty(Directory.GetFiles(Path.Combine(h.Directory, "manifests"), "*.manifest"));
        Assert.True(File.Exists(LogPath(h.Directory)));
    }

    /// <summary>A manifest file of the older layout (format 1), as docs/services.md described it.</summary>
    private static byte[] LegacyManifest(KvManifest m)
    {
        var bytes = new byte[52 + m.Metadata.Length + 4];
        var s = bytes.AsSpan();
        BinaryPrimitives.WriteUInt32LittleEndian(s, 0x4D564B53);
        BinaryPrimitives.WriteUInt16LittleEndian(s[4..], 1);
        BinaryPrimitives.WriteInt64LittleEndian(s[8..], m.Version);
        m.IndexToken.TryWriteBytes(s[16..]);
        m.LogToken.TryWriteBytes(s[32..]);
        BinaryPrimitives.WriteInt32LittleEndian(s[48..], m.Metadata.Length);
        m.Metadata.CopyTo(s[52..]);
        BinaryPrimitives.WriteUInt32LittleEndian(s[^4..], Crc32.HashToUInt32(s[..^4]));
        return bytes;
    }
}
