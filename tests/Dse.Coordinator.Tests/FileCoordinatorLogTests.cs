using Dse.Testing;
using System.Buffers.Binary;
using Dse.Coordinator.Tests.Infrastructure;

namespace Dse.Coordinator.Tests;

/// <summary>The file log's format, torn-tail recovery, corruption detection and in-process locking.</summary>
[Trait("Category", "Recovery")]
public sealed class FileCoordinatorLogTests : IAsyncLifetime
{
    private const int TornTailEvent = 3101;

    private readonly FileLogHarness _harness = new();

    public Task InitializeAsync() => Task.CompletedTask;

    public async Task DisposeAsync() => await _harness.DisposeAsync();

    [Fact]
    public async Task AppendAsync_TwoRecords_WritesTheDocumentedFraming()
    {
        await WriteRecordsAsync("membership: +a", "failure: a fsn=7");

        byte[] expected = Frames.Concat(Frames.Encode("membership: +a"), Frames.Encode("failure: a fsn=7"));
        Assert.Equal(expected, await File.ReadAllBytesAsync(_harness.Path));
        Assert.Equal(0x44, expected[0]);
        Assert.Equal(0x63, expected[3]);
    }

    [Fact]
    public async Task OpenAsync_TornTailInHeader_TruncatesItAndKeepsTheRecords()
    {
        long valid = await WriteRecordsAsync("one", "two");
        AppendRaw(Frames.Encode("three")[..7]);

        await AssertTornTailRecoveredAsync(valid, "one", "two");
    }

    [Fact]
    public async Task OpenAsync_TornTailInPayload_TruncatesItAndKeepsTheRecords()
    {
        long valid = await WriteRecordsAsync("one", "two");
        byte[] third = Frames.Encode(new string('x', 100));
        AppendRaw(third[..(Frames.HeaderSize + 40)]);

        await AssertTornTailRecoveredAsync(valid, "one", "two");
    }

    [Fact]
    public async Task OpenAsync_LastRecordFailsItsChecksum_TruncatesItAsTorn()
    {
        long valid = await WriteRecordsAsync("one", "two");
        byte[] third = Frames.Encode("three");
        third[^1] ^= 0xFF;
        AppendRaw(third);

        await AssertTornTailRecoveredAsync(valid, "one", "two");
    }

    [Fact]
    public async Task OpenAsync_ZeroFilledTail_TruncatesItAsTorn()
    {
        long valid = await WriteRecordsAsync("one");
        AppendRaw(new byte[4096]);

        await AssertTornTailRecoveredAsync(valid, "one");
    }

    [Fact]
    public async Task OpenAsync_CorruptRecordFollowedByValidRecord_ThrowsInvalidDataExceptionNamingTheOffset()
    {
        await WriteRecordsAsync("one", "two", "three");
        long secondOffset = Frames.Encode("one").Length;
        FlipByte(secondOffset + Frames.HeaderSize);
        long lengthBefore = new FileInfo(_harness.Path).Length;

        await using var log = new FileCoordinatorLog(_harness.Path);
        var error = await Assert.ThrowsAsync<InvalidDataException>(() => log.OpenAsync());

        Assert.Contains($"offset {secondOffset}", error.Message, StringComparison.Ordinal);
        Assert.Contains("checksum", error.Message, StringComparison.Ordinal);
        Assert.Equal(lengthBefore, new FileInfo(_harness.Path).Length);
    }

    [Fact]
    public async Task OpenAsync_CorruptLengthReachingPastTheEnd_ThrowsInsteadOfDroppingTheLaterRecord()
    {
        await WriteRecordsAsync("one", "two", "three");
        long secondOffset = Frames.Encode("one").Length;
        SetUInt32(secondOffset + 4, 1_000_000);

        await using var log = new FileCoordinatorLog(_harness.Path);
        var error = await Assert.ThrowsAsync<InvalidDataException>(() => log.OpenAsync());

        Assert.Contains($"offset {secondOffset}", error.Message, StringComparison.Ordinal);
        Assert.Contains($"valid record follows at offset {secondOffset + Frames.Encode("two").Length}", error.Message, StringComparison.Ordinal);
    }

    [Fact]
    public async Task OpenAsync_CorruptRecordBeforeTornTail_ThrowsInsteadOfDroppingADurableRecord()
    {
        await WriteRecordsAsync("one", "two");
        long secondOffset = Frames.Encode("one").Length;
        FlipByte(secondOffset + Frames.HeaderSize);
        AppendRaw(Frames.Encode("three")[..10]);

        await using var log = new FileCoordinatorLog(_harness.Path);
        var error = await Assert.ThrowsAsync<InvalidDataException>(() => log.OpenAsync());

        Assert.Contains($"offset {secondOffset}", error.Message, StringComparison.Ordinal);
    }

    [Fact]
    public async Task OpenAsync_GarbageInsteadOfTheFirstRecord_ThrowsInvalidDataException()
    {
        Directory.CreateDirectory(Path.GetDirectoryName(_harness.Path)!);
        await File.WriteAllBytesAsync(_harness.Path, Frames.Bytes("this is not a coordinator log at all"));

        await using var log = new FileCoordinatorLog(_harness.Path);
        var error = await Assert.ThrowsAsync<InvalidDataException>(() => log.OpenAsync());

        Assert.Contains("offset 0", error.Message, StringComparison.Ordinal);
        Assert.Contains("bad magic", error.Message, StringComparison.Ordinal);
    }

    [Fact]
    public async Task OpenAsync_SecondInstanceInTheSameProcess_ThrowsFencedSayingTheLogIsHeld()
    {
        await using var holder = new FileCoordinatorLog(_harness.Path);
        await holder.OpenAsync();
        await holder.AppendAsync(Frames.Bytes("holder"));

        await using var contender = new FileCoordinatorLog(_harness.Path);
        var error = await Assert.ThrowsAsync<CoordinatorLogFencedException>(() => contender.OpenAsync());

        Assert.Contains("held by another coordinator", error.Message, StringComparison.Ordinal);
        Assert.Contains(_harness.Path, error.Message, StringComparison.Ordinal);
        Assert.IsType<IOException>(error.InnerException, exactMatch: false);
        await holder.AppendAsync(Frames.Bytes("holder still appends"));
        Assert.Equal(2, holder.DurableAppends);
    }

    [Fact]
    public async Task DisposeAsync_Holder_ReleasesTheLockForTheNextIncarnation()
    {
        var holder = new FileCoordinatorLog(_harness.Path);
        await holder.OpenAsync();
        await holder.AppendAsync(Frames.Bytes("before restart"));
        await holder.DisposeAsync();

        await using var next = new FileCoordinatorLog(_harness.Path);

        Assert.Equal(["before restart"], Frames.Texts(await next.OpenAsync()));
    }

    [Fact]
    public async Task OpenAsync_MissingDirectory_CreatesItAndAnEmptyLog()
    {
        Assert.False(Directory.Exists(Path.GetDirectoryName(_harness.Path)));

        await using var log = new FileCoordinatorLog(_harness.Path);

        Assert.Empty(await log.OpenAsync());
        Assert.Equal(0, new FileInfo(_harness.Path).Length);
        Assert.Contains(_harness.Path, log.Description, StringComparison.Ordinal);
    }

    /// <summary>Opens, asserts the recovered records, the truncation and its log message, then appends and reopens.</summary>
    private async Task AssertTornTailRecoveredAsync(long validLength, params string[] expected)
    {
        long tornLength = new FileInfo(_harness.Path).Length;
        var logger = new LogCapture();
        await using (var log = _harness.CreateLog(logger))
        {
            Assert.Equal(expected, Frames.Texts(await log.OpenAsync()));
            Assert.Equal(validLength, new FileInfo(_harness.Path).Length);
            var warning = Assert.Single(logger.Entries, entry => entry.EventId.Id == TornTailEvent);
            Assert.Contains($"truncated {tornLength - validLength} bytes at offset {validLength}", warning.Message, StringComparison.Ordinal);
            await log.AppendAsync(Frames.Bytes("after repair"));
        }

        await using var reopened = new FileCoordinatorLog(_harness.Path);
        string[] afterRepair = [.. expected, "after repair"];
        Assert.Equal(afterRepair, Frames.Texts(await reopened.OpenAsync()));
    }

    /// <summary>Appends the records through a log instance and returns the file's length.</summary>
    private async Task<long> WriteRecordsAsync(params string[] records)
    {
        await using (var log = new FileCoordinatorLog(_harness.Path))
        {
            await log.OpenAsync();
            foreach (string record in records)
            {
                await log.AppendAsync(Frames.Bytes(record));
            }
        }

        return new FileInfo(_harness.Path).Length;
    }

    private void AppendRaw(byte[] bytes)
    {
        using var file = new FileStream(_harness.Path, FileMode.Append, FileAccess.Write);
        file.Write(bytes);
    }

    private void FlipByte(long offset)
    {
        using var file = new FileStream(_harness.Path, FileMode.Open, FileAccess.ReadWrite);
        file.Position = offset;
        int value = file.ReadByte();
        file.Position = offset;
        file.WriteByte((byte)(value ^ 0xFF));
    }

    private void SetUInt32(long offset, uint value)
    {
        using var file = new FileStream(_harness.Path, FileMode.Open, FileAccess.ReadWrite);
        file.Position = offset;
        Span<byte> bytes = stackalloc byte[4];
        BinaryPrimitives.WriteUInt32LittleEndian(bytes, value);
        file.Write(bytes);
    }
}
