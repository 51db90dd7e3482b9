using Dse.Storage.Tests.Infrastructure;
using FASTER.core;

namespace Dse.Storage.Tests;

/// <summary>SnapshotLog behaviour that must hold on every device kind; one derived class per device kind runs it.</summary>
public abstract class SnapshotLogContractTests : IAsyncLifetime
{
    protected const long SegmentSize = 1 << 16;

    private static readonly int[] PayloadSizes = [0, 1, 447, 448, 449, 5000, 150_000];

    private DeviceHarness _harness = null!;

    protected DeviceHarness Harness => _harness;

    public Task InitializeAsync()
    {
        _harness = CreateHarness();
        return Task.CompletedTask;
    }

    public async Task DisposeAsync() => await _harness.DisposeAsync();

    [Fact]
    public async Task OpenAsync_EmptyDevice_HasNoRecords()
    {
        var (_, log) = await OpenAsync();

        Assert.Empty(log.Records);
        Assert.Null(log.Latest);
        Assert.Equal(0, log.TailAddress);
    }

    [Fact]
    public async Task AppendAsync_VariousSizes_ReopenRecoversSameRecordsInOrder()
    {
        var (device, log) = await OpenAsync();
        for (int i = 0; i < PayloadSizes.Length; i++)
        {
            await log.AppendAsync((ulong)(i + 1), TestIo.Pattern(PayloadSizes[i], i));
        }

        long tail = log.TailAddress;
        var (_, reopened) = await ReopenAsync(device, log);

        Assert.Equal(tail, reopened.TailAddress);
        AssertRecords(reopened, PayloadSizes.Select((size, i) => ((ulong)(i + 1), TestIo.Pattern(size, i))).ToArray());
        Assert.Equal(Enumerable.Range(0, PayloadSizes.Length).Select(i => (ulong)i), reopened.Records.Select(r => r.Sequence));
    }

    [Fact]
    public async Task AppendAsync_AfterReopen_ContinuesAtTail()
    {
        var (device, log) = await OpenAsync();
        await log.AppendAsync(1, TestIo.Pattern(100, 1));
        (device, log) = await ReopenAsync(device, log);

        await log.AppendAsync(2, TestIo.Pattern(70_000, 2));
        await log.AppendAsync(3, TestIo.Pattern(10, 3));
        var (_, reopened) = await ReopenAsync(device, log);

        AssertRecords(reopened, (1, TestIo.Pattern(100, 1)), (2, TestIo.Pattern(70_000, 2)), (3, TestIo.Pattern(10, 3)));
    }

    [Fact]
    public async Task OpenAsync_TornLastRecord_DropsItSilentlyAndNextAppendTakesItsPlace()
    {
        var (device, log) = await OpenAsync();
        await log.AppendAsync(1, TestIo.Pattern(100, 1));
        await log.AppendAsync(2, TestIo.Pattern(100, 2));
        await log.AppendAsync(3, TestIo.Pattern(2000, 3));
        long torn = log.Records[2].Address;

        // The header sector of the last record made it to the device, one of its payload sectors did not.
        await TestIo.WriteOkAsync(device, (ulong)torn + 512, TestIo.Pattern(512, 99));
        (device, log) = await ReopenAsync(device, log);

        AssertRecords(log, (1, TestIo.Pattern(100, 1)), (2, TestIo.Pattern(100, 2)));
        Assert.Equal(torn, log.TailAddress);

        await log.AppendAsync(4, TestIo.Pattern(10, 4));
        var (_, reopened) = await ReopenAsync(device, log);
        AssertRecords(reopened, (1, TestIo.Pattern(100, 1)), (2, TestIo.Pattern(100, 2)), (4, TestIo.Pattern(10, 4)));
    }

    [Fact]
    public async Task OpenAsync_CorruptPayloadFollowedByValidRecord_ThrowsInvalidDataExceptionNamingAddress()
    {
        var (device, log) = await OpenAsync();
        await log.AppendAsync(1, TestIo.Pattern(100, 1));
        await log.AppendAsync(2, TestIo.Pattern(2000, 2));
        await log.AppendAsync(3, TestIo.Pattern(100, 3));
        long corrupt = log.Records[1].Address;
        await TestIo.WriteOkAsync(device, (ulong)corrupt + 1024, TestIo.Pattern(512, 99));
        await log.DisposeAsync();
        Harness.Close(device);

        var error = await Assert.ThrowsAsync<InvalidDataException>(() => SnapshotLog.OpenAsync(Harness.Open(), Options()));

        Assert.Contains($"address {corrupt}", error.Message, StringComparison.Ordinal);
        Assert.Contains("payload checksum", error.Message, StringComparison.Ordinal);
    }

    [Fact]
    public async Task OpenAsync_CorruptHeaderBeforeValidRecords_ThrowsInvalidDataExceptionNamingAddress()
    {
        var (device, log) = await OpenAsync();
        await log.AppendAsync(1, TestIo.Pattern(100, 1));
        await log.AppendAsync(2, TestIo.Pattern(100, 2));
        await log.AppendAsync(3, TestIo.Pattern(100, 3));
        long corrupt = log.Records[1].Address;
        var sector = await TestIo.ReadOkAsync(device, (ulong)corrupt, 512);
        sector[20] ^= 0x01;
        await TestIo.WriteOkAsync(device, (ulong)corrupt, sector);
        await log.DisposeAsync();
        Harness.Close(device);

        var error = await Assert.ThrowsAsync<InvalidDataException>(() => SnapshotLog.OpenAsync(Harness.Open(), Options()));

        Assert.Contains($"address {corrupt}", error.Message, StringComparison.Ordinal);
        Assert.Contains("header checksum", error.Message, StringComparison.Ordinal);
    }

    [Fact]
    public async Task DropAfterAsync_ThenAppend_RecoveryIgnoresDroppedKeysButKeepsNewerAppends()
    {
        var (device, log) = await OpenAsync();
        for (ulong key = 1; key <= 4; key++)
        {
            await log.AppendAsync(key, TestIo.Pattern(200, (int)key));
        }

        await log.DropAfterAsync(2);
        Assert.Equal([1UL, 2UL], log.Records.Select(r => r.Key));
        await log.AppendAsync(3, TestIo.Pattern(300, 33));
        var (_, reopened) = await ReopenAsync(device, log);

        AssertRecords(reopened, (1, TestIo.Pattern(200, 1)), (2, TestIo.Pattern(200, 2)), (3, TestIo.Pattern(300, 33)));
    }

    [Fact]
    public async Task DropAfterAsync_NoGreaterKey_WritesNothing()
    {
        var (_, log) = await OpenAsync();
        await log.AppendAsync(1, TestIo.Pattern(10, 1));
        long tail = log.TailAddress;

        await log.DropAfterAsync(1);

        Assert.Equal(tail, log.TailAddress);
        Assert.Single(log.Records);
    }

    [Fact]
    public async Task TruncateBeforeAsync_ThenReopen_KeepsOnlyKeysFromThePoint()
    {
        var (device, log) = await OpenAsync();
        for (ulong key = 1; key <= 3; key++)
        {
            await log.AppendAsync(key, TestIo.Pattern(50, (int)key));
        }

        await log.TruncateBeforeAsync(3);
        Assert.Equal([3UL], log.Records.Select(r => r.Key));
        var (_, reopened) = await ReopenAsync(device, log);

        AssertRecords(reopened, (3, TestIo.Pattern(50, 3)));
        Assert.Equal(3UL, reopened.Latest!.Key);
    }

    [Fact]
    public async Task CrashCut_AppendsAfterTheCut_AreAcknowledgedButGoneAfterReopen()
    {
        var inner = Harness.Open();
        var faults = new FaultInjectingDevice(inner, ownsInner: false);
        var log = await SnapshotLog.OpenAsync(faults, Options());
        await log.AppendAsync(1, TestIo.Pattern(100, 1));
        await log.AppendAsync(2, TestIo.Pattern(100, 2));

        faults.CutNow();
        await log.AppendAsync(3, TestIo.Pattern(100, 3));
        Assert.Equal(3, log.Records.Count);
        Assert.Equal(1, faults.WritesDropped);

        // Crash: the owner goes away (and with its process its lock file); a new device over the same storage sees only what was forwarded.
        log.ReleaseFenceAsProcessExitWould();
        faults.Dispose();
        Harness.Close(inner);
        var (_, recovered) = await OpenAsync();

        AssertRecords(recovered, (1, TestIo.Pattern(100, 1)), (2, TestIo.Pattern(100, 2)));
    }

    [Fact]
    public async Task CrashCut_InsideMultiSegmentRecord_RecordIsDroppedAndLogStaysAppendable()
    {
        var inner = Harness.Open();
        var faults = new FaultInjectingDevice(inner, ownsInner: false);
        var log = await SnapshotLog.OpenAsync(faults, Options());
        await log.AppendAsync(1, TestIo.Pattern(100, 1));

        // The 150 KB record spans three 64 KiB segments: its two tail parts reach the device, its header part is lost.
        faults.CutAfter(faults.WritesIssued + 2);
        await log.AppendAsync(2, TestIo.Pattern(150_000, 2));
        Assert.Equal(3, faults.WritesForwarded);
        Assert.Equal(1, faults.WritesDropped);
        log.ReleaseFenceAsProcessExitWould();
        faults.Dispose();
        Harness.Close(inner);

        var (device, recovered) = await OpenAsync();
        AssertRecords(recovered, (1, TestIo.Pattern(100, 1)));
        await recovered.AppendAsync(3, TestIo.Pattern(700, 3));
        var (_, reopened) = await ReopenAsync(device, recovered);

        AssertRecords(reopened, (1, TestIo.Pattern(100, 1)), (3, TestIo.Pattern(700, 3)));
    }

    [Fact]
    public async Task AppendAsync_ConcurrentCallers_AllRecordsRecoveredInSequenceOrder()
    {
        var (device, log) = await OpenAsync();
        var start = new TaskCompletionSource(TaskCreationOptions.RunContinuationsAsynchronously);
        var appends = Enumerable.Range(0, 16).Select(i => Task.Run(async () =>
        {
            await start.Task;
            await log.AppendAsync((ulong)i, TestIo.Pattern(100 + (i * 50), i));
        })).ToArray();
        start.SetResult();
        await Task.WhenAll(appends).WaitAsync(TestIo.Timeout);

        var live = log.Records;
        var (_, reopened) = await ReopenAsync(device, log);

        Assert.Equal(16, reopened.Records.Count);
        Assert.Equal(live.Select(r => (r.Key, r.Sequence, r.Address)), reopened.Records.Select(r => (r.Key, r.Sequence, r.Address)));
        Assert.Equal(reopened.Records.OrderBy(r => r.Address).Select(r => r.Sequence), reopened.Records.Select(r => r.Sequence));
        foreach (var record in reopened.Records)
        {
            Assert.Equal(TestIo.Pattern(100 + ((int)record.Key * 50), (int)record.Key), record.Payload.ToArray());
        }
    }

    protected abstract DeviceHarness CreateHarness();

    private static SnapshotLogOptions Options() => new() { SegmentSize = SegmentSize };

    private static void AssertRecords(SnapshotLog log, params (ulong Key, byte[] Payload)[] expected)
    {
        Assert.Equal(expected.Select(e => e.Key), log.Records.Select(r => r.Key));
        for (int i = 0; i < expected.Length; i++)
        {
            Assert.Equal(expected[i].Payload, log.Records[i].Payload.ToArray());
        }
    }

    private async Task<(IDevice Device, SnapshotLog Log)> OpenAsync()
    {
        var device = Harness.Open();
        return (device, await SnapshotLog.OpenAsync(device, Options()));
    }

    private async Task<(IDevice Device, SnapshotLog Log)> ReopenAsync(IDevice device, SnapshotLog log)
    {
        await log.DisposeAsync();
        Harness.Close(device);
        return await OpenAsync();
    }
}
