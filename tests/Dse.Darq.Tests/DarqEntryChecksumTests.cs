using System.Buffers.Binary;
using System.IO.Hashing;

namespace Dse.Darq.Tests;

/// <summary>
/// Entry header versions and their checksums (docs/darq-format.md): version 2 is written, XXH3 of the whole entry with the
/// checksum field zero; version 1, XXH64 of the body seeded with XXH64 of header bytes 0..15, is still read.
/// </summary>
public sealed class DarqEntryChecksumTests
{
    [Fact]
    public void Xxh3Of48_MatchesSystemIoHashing()
    {
        var random = new Random(5);
        var entry = new byte[48];
        for (int round = 0; round < 2000; round++)
        {
            random.NextBytes(entry);
            entry.AsSpan(16, 8).Clear();
            ulong expected = XxHash3.HashToUInt64(entry);
            ulong actual = DarqEntryFormat.Xxh3Of48(Word(entry, 0), Word(entry, 1), Word(entry, 3), Word(entry, 4), Word(entry, 5));
            Assert.Equal(expected, actual);
        }

        static ulong Word(byte[] bytes, int index) => BinaryPrimitives.ReadUInt64LittleEndian(bytes.AsSpan(8 * index));
    }

    [Theory]
    [InlineData(0L, 1L, 0L)]
    [InlineData(7L, 3L, 1_234_567L)]
    [InlineData(long.MaxValue, long.MaxValue, long.MaxValue)]
    [InlineData(-1L, -1L, -1L)]
    public void WriteCompletion_ConsumingOne_SameBytesAsTheGeneralWriter(long sequence, long incarnation, long consumed)
    {
        var general = DarqEntryFormat.Completion(sequence, incarnation, stepEntryCount: 0, [consumed]);
        var direct = new byte[DarqEntryFormat.CompletionLength(1)];

        DarqEntryFormat.WriteCompletion(direct, sequence, incarnation, consumed);

        Assert.Equal(general, direct);
        Assert.Null(DarqEntryFormat.TryParse(direct, out var kind, out _, out long parsedSequence));
        Assert.Equal(DarqEntryKind.Completion, kind);
        Assert.Equal(sequence, parsedSequence);
    }

    [Fact]
    public void WriteCompletion_WrongLength_Refused()
    {
        var tooLong = new byte[DarqEntryFormat.CompletionLength(1) + 8];

        Assert.Throws<ArgumentOutOfRangeException>(() => DarqEntryFormat.WriteCompletion(tooLong, 1, 1, 1));
    }

    [Theory]
    [InlineData(0)]
    [InlineData(24)]
    [InlineData(232)]
    [InlineData(233)]
    [InlineData(4000)]
    public void NewEntries_AreVersion2_AndEveryByteIsCovered(int payloadLength)
    {
        // 232 bytes of payload make a 256-byte entry (verified through a copy on the stack); 233, one byte more (hashed in parts).
        var payload = new byte[payloadLength];
        new Random(payloadLength).NextBytes(payload);
        var entry = DarqEntryFormat.Self(42, payload);

        Assert.Equal(2, entry[0]);
        Assert.Equal(XxHash3.HashToUInt64(WithChecksumZero(entry)), BinaryPrimitives.ReadUInt64LittleEndian(entry.AsSpan(16)));
        Assert.Null(DarqEntryFormat.TryParse(entry, out _, out _, out _));
        for (int offset = 0; offset < entry.Length; offset += Math.Max(1, entry.Length / 64))
        {
            if (offset is 0 or (>= 4 and < 8))
            {
                continue; // the version and the body length have errors of their own
            }

            var damaged = (byte[])entry.Clone();
            damaged[offset] ^= 0x10;
            string? error = DarqEntryFormat.TryParse(damaged, out _, out _, out _);
            Assert.True(error is not null, $"a flipped bit at offset {offset} went unnoticed");
        }

        var lastByte = (byte[])entry.Clone();
        lastByte[^1] ^= 1;
        Assert.Equal("checksum mismatch", DarqEntryFormat.TryParse(lastByte, out _, out _, out _));
    }

    [Theory]
    [InlineData(0)]
    [InlineData(3)]
    [InlineData(1000)]
    public void Version1Entries_StillRead(int payloadLength)
    {
        var payload = new byte[payloadLength];
        new Random(payloadLength + 1).NextBytes(payload);
        var entry = DarqEntryFormat.Self(9, payload, DarqEntryFormat.ActivityFlag);
        entry[0] = 1;
        SealVersion1(entry);

        Assert.Null(DarqEntryFormat.TryParse(entry, out var kind, out ushort flags, out long sequence));
        Assert.Equal(DarqEntryKind.Self, kind);
        Assert.Equal(DarqEntryFormat.ActivityFlag, flags);
        Assert.Equal(9, sequence);

        // A version-1 entry is checked with the version-1 checksum: one changed byte is a mismatch, and so is an entry
        // that carries a version-2 checksum under version 1.
        var damaged = (byte[])entry.Clone();
        damaged[^1] ^= 4;
        Assert.NotNull(DarqEntryFormat.TryParse(damaged, out _, out _, out _));
        var mislabelled = DarqEntryFormat.Self(9, payload);
        mislabelled[0] = 1;
        Assert.Equal("checksum mismatch", DarqEntryFormat.TryParse(mislabelled, out _, out _, out _));
    }

    [Fact]
    public void UnknownVersion_RefusedNamingIt()
    {
        var entry = DarqEntryFormat.Register(1, 1);
        entry[0] = 3;

        string? error = DarqEntryFormat.TryParse(entry, out _, out _, out _);

        Assert.Equal("unsupported entry format version 3 (this build reads versions 1 and 2)", error);
    }

    [Fact]
    [Trait("Category", "Recovery")]
    public async Task Reopen_LogWithVersion1Entries_ReadsBackAndContinuesInVersion2()
    {
        // A log a revision-5 build wrote: its IN entries and the first step's completion rewritten in place as version 1
        // (same bytes, the version-1 checksum), beside version-2 entries (the registration). Then a new instance reads it
        // back, steps on (appending version 2) and reopens once more.
        var storage = new DarqTestStorage();
        var lsns = new List<(long Lsn, int Length)>();
        await using (var darq = await storage.OpenAsync())
        {
            var processor = await darq.RegisterProcessorAsync();
            foreach (string text in new[] { "one", "two", "three" })
            {
                lsns.Add(((await darq.EnqueueAsync(text.Bytes())).Lsn, DarqEntryFormat.HeaderSize + 16 + text.Length));
            }

            var first = await processor.Messages.ReadAsync();
            var step = await processor.StepAsync(new DarqStep().Consume(first));
            lsns.Add((step.CompletionLsn, DarqEntryFormat.CompletionLength(1)));
            await darq.CommitAsync();
        }

        foreach (var (lsn, length) in lsns)
        {
            RewriteAsVersion1(storage, lsn, length);
        }

        await using (var darq = await storage.OpenAsync())
        {
            Assert.Equal(2, darq.UnconsumedCount);
            var processor = await darq.RegisterProcessorAsync();
            var replay = new List<string>();
            for (int i = 0; i < processor.ReplayCount; i++)
            {
                var message = await processor.Messages.ReadAsync();
                replay.Add(message.Text());
                if (i == 0)
                {
                    await processor.StepAsync(new DarqStep().Consume(message));
                }
            }

            Assert.Equal(["two", "three"], replay);
            await darq.CommitAsync();
        }

        await using (var darq = await storage.OpenAsync())
        {
            Assert.Equal(1, darq.UnconsumedCount);
        }

        // A damaged version-1 entry is found by its own checksum.
        var (inLsn, inLength) = lsns[2];
        var damaged = ReadEntry(storage, inLsn, inLength);
        damaged[^1] ^= 1;
        WriteEntry(storage, inLsn, damaged);
        var error = await Assert.ThrowsAsync<InvalidDataException>(() => storage.OpenAsync());
        Assert.Contains("checksum", error.Message, StringComparison.Ordinal);
    }

    private static void RewriteAsVersion1(DarqTestStorage storage, long lsn, int length)
    {
        var entry = ReadEntry(storage, lsn, length);
        Assert.Equal(DarqEntryFormat.Version, entry[0]);
        entry[0] = DarqEntryFormat.Version1;
        SealVersion1(entry);
        WriteEntry(storage, lsn, entry);
    }

    private static byte[] ReadEntry(DarqTestStorage storage, long lsn, int length)
    {
        var entry = new byte[length];
        long address = lsn + DarqEntryFormat.FasterHeaderSize;
        Assert.True(storage.Log.TryRead((int)(address / DarqTestStorage.SegmentSize), address % DarqTestStorage.SegmentSize, entry));
        return entry;
    }

    private static void WriteEntry(DarqTestStorage storage, long lsn, byte[] entry)
    {
        long address = lsn + DarqEntryFormat.FasterHeaderSize;
        storage.Log.Write((int)(address / DarqTestStorage.SegmentSize), address % DarqTestStorage.SegmentSize, entry);
    }

    private static byte[] WithChecksumZero(byte[] entry)
    {
        var copy = (byte[])entry.Clone();
        copy.AsSpan(16, 8).Clear();
        return copy;
    }

    /// <summary>The version-1 checksum docs/darq-format.md defines: XxHash64 of the body, seeded with XxHash64 of bytes 0..15.</summary>
    private static void SealVersion1(byte[] entry)
    {
        ulong seed = XxHash64.HashToUInt64(entry.AsSpan(0, 16));
        BinaryPrimitives.WriteUInt64LittleEndian(entry.AsSpan(16), XxHash64.HashToUInt64(entry.AsSpan(DarqEntryFormat.HeaderSize), unchecked((long)seed)));
    }
}
