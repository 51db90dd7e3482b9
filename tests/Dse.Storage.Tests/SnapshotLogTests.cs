using Dse.Storage.Tests.Infrastructure;

namespace Dse.Storage.Tests;

/// <summary>SnapshotLog error handling, driven through in-memory and fault-injecting devices.</summary>
public sealed class SnapshotLogTests
{
    private const long SegmentSize = 1 << 16;

    private readonly InMemoryStorage _storage = new();

    [Fact]
    public async Task AppendAsync_TransientWriteFault_ThrowsIOExceptionAndNextAppendSucceeds()
    {
        using var faults = new InMemoryDevice(_storage).WithFaults();
        var log = await SnapshotLog.OpenAsync(faults, Options());
        await log.AppendAsync(1, TestIo.Pattern(100, 1));

        faults.FailNextWrites(1);
        var error = await Assert.ThrowsAsync<IOException>(() => log.AppendAsync(2, TestIo.Pattern(100, 2)).AsTask());
        await log.AppendAsync(3, TestIo.Pattern(100, 3));

        Assert.Contains("injected transient fault", error.Message, StringComparison.Ordinal);
        Assert.Equal([1UL, 3UL], log.Records.Select(r => r.Key));
        var recovered = await ReopenAsync();
        Assert.Equal([1UL, 3UL], recovered.Records.Select(r => r.Key));
    }

    [Fact]
    public async Task AppendAsync_MultiSegmentRecordFailsHalfWritten_RetryOverwritesAndRecoveryIsClean()
    {
        using var faults = new InMemoryDevice(_storage).WithFaults();
        var log = await SnapshotLog.OpenAsync(faults, Options());
        await log.AppendAsync(1, TestIo.Pattern(100, 1));

        // The first part issued (the record's tail) lands, the second fails: the append reports failure.
        faults.FailPermanentlyAfter(faults.WritesIssued + 1);
        await Assert.ThrowsAsync<IOException>(() => log.AppendAsync(2, TestIo.Pattern(150_000, 2)).AsTask());
        faults.ClearFaults();
        await log.AppendAsync(3, TestIo.Pattern(100, 3));

        var recovered = await ReopenAsync();
        Assert.Equal([1UL, 3UL], recovered.Records.Select(r => r.Key));
        Assert.Equal(TestIo.Pattern(100, 3), recovered.Records[1].Payload.ToArray());
    }

    [Fact]
    public async Task OpenAsync_ReadFault_ThrowsIOException()
    {
        using (var device = new InMemoryDevice(_storage))
        {
            var log = await SnapshotLog.OpenAsync(device, Options());
            await log.AppendAsync(1, TestIo.Pattern(100, 1));
        }

        using var faults = new InMemoryDevice(_storage).WithFaults();
        faults.FailNextReads(1);

        await Assert.ThrowsAsync<IOException>(() => SnapshotLog.OpenAsync(faults, Options()));
    }

    [Fact]
    public async Task OpenAsync_DeviceHoldingOtherData_ThrowsInvalidDataExceptionAtAddressZero()
    {
        _storage.Write(0, 0, TestIo.Pattern(512, 5));
        using var device = new InMemoryDevice(_storage);

        var error = await Assert.ThrowsAsync<InvalidDataException>(() => SnapshotLog.OpenAsync(device, Options()));

        Assert.Contains("address 0 ", error.Message, StringComparison.Ordinal);
        Assert.Contains("bad magic", error.Message, StringComparison.Ordinal);
    }

    [Fact]
    public async Task OpenAsync_RecordCopiedToAnotherAddress_IsReportedNotReplayed()
    {
        using var device = new InMemoryDevice(_storage);
        var log = await SnapshotLog.OpenAsync(device, Options());
        await log.AppendAsync(1, TestIo.Pattern(100, 1));
        await log.AppendAsync(2, TestIo.Pattern(100, 2));
        var first = new byte[512];
        Assert.True(_storage.TryRead(0, 0, first));

        // A valid header at the wrong place (stale data, a misdirected write) must not pass for a record.
        _storage.Write(0, log.Records[1].Address, first);
        var error = await Assert.ThrowsAsync<InvalidDataException>(() => SnapshotLog.OpenAsync(new InMemoryDevice(_storage), Options()));

        Assert.Contains("belongs to address 0", error.Message, StringComparison.Ordinal);
    }

    [Fact]
    public async Task AppendAsync_PayloadOverLimit_ThrowsArgumentException()
    {
        using var device = new InMemoryDevice(_storage);
        var log = await SnapshotLog.OpenAsync(device, new SnapshotLogOptions { SegmentSize = SegmentSize, MaxPayloadLength = 1000 });

        Assert.Throws<ArgumentException>(() => log.AppendAsync(1, new byte[1001]));
        await log.AppendAsync(1, new byte[1000]);
        Assert.Single(log.Records);
    }

    [Fact]
    public async Task AppendAsync_AfterDispose_ThrowsObjectDisposedException()
    {
        using var device = new InMemoryDevice(_storage);
        var log = await SnapshotLog.OpenAsync(device, Options());
        await log.DisposeAsync();

        Assert.Throws<ObjectDisposedException>(() => log.AppendAsync(1, new byte[1]));
    }

    [Fact]
    public async Task DisposeAsync_OwnsDevice_DisposesTheDevice()
    {
        var device = new InMemoryDevice(_storage);
        var log = await SnapshotLog.OpenAsync(device, new SnapshotLogOptions { SegmentSize = SegmentSize, OwnsDevice = true });

        await log.DisposeAsync();

        var errorCode = await TestIo.WriteAsync(device, 0, new byte[512]);
        Assert.Equal(DeviceErrorCodes.Disposed, errorCode);
    }

    [Fact]
    public async Task Records_SnapshotTakenBeforeAppend_DoesNotChange()
    {
        using var device = new InMemoryDevice(_storage);
        var log = await SnapshotLog.OpenAsync(device, Options());
        await log.AppendAsync(1, new byte[1]);
        var before = log.Records;

        await log.AppendAsync(2, new byte[1]);

        Assert.Single(before);
        Assert.Equal(2, log.Records.Count);
    }

    [Fact]
    public async Task OpenAsync_InvalidSegmentSize_Throws()
    {
        using var device = new InMemoryDevice(_storage);

        await Assert.ThrowsAsync<ArgumentOutOfRangeException>(() => SnapshotLog.OpenAsync(device, new SnapshotLogOptions { SegmentSize = 5000 }));
    }

    [Fact]
    public async Task OpenAsync_LogWrittenBySmallerSectorDevice_RecoversOnTheSameStorage()
    {
        var options = new InMemoryDeviceOptions { SectorSize = 64 };
        using (var device = new InMemoryDevice(_storage, options))
        {
            var log = await SnapshotLog.OpenAsync(device, Options());
            await log.AppendAsync(1, TestIo.Pattern(10, 1));
            await log.AppendAsync(2, TestIo.Pattern(100, 2));
            Assert.Equal(128 + 192, log.TailAddress);
        }

        using var reopened = new InMemoryDevice(_storage, options);
        var recovered = await SnapshotLog.OpenAsync(reopened, Options());

        Assert.Equal([1UL, 2UL], recovered.Records.Select(r => r.Key));
    }

    private static SnapshotLogOptions Options() => new() { SegmentSize = SegmentSize };

    private async Task<SnapshotLog> ReopenAsync() => await SnapshotLog.OpenAsync(new InMemoryDevice(_storage), Options());
}
