using Dse.Storage.Tests.Infrastructure;
using FASTER.core;

namespace Dse.Storage.Tests;

public sealed class FaultInjectingDeviceTests : IDisposable
{
    private const long SegmentSize = 1 << 16;
    private const int Block = 512;

    private readonly InMemoryStorage _storage = new();
    private readonly FaultInjectingDevice _device;

    public FaultInjectingDeviceTests()
    {
        _device = new InMemoryDevice(_storage, new InMemoryDeviceOptions { CompleteSynchronously = true })
            .WithFaults(new FaultInjectingDeviceOptions { Seed = 7 });
        _device.Initialize(SegmentSize);
    }

    public void Dispose() => _device.Dispose();

    [Fact]
    public async Task FailNextWrites_Two_FirstTwoWritesFailWithoutWritingAndThirdSucceeds()
    {
        _device.FailNextWrites(2);

        uint first = await TestIo.WriteAsync(_device, 0, TestIo.Pattern(Block, 1));
        uint second = await TestIo.WriteAsync(_device, Block, TestIo.Pattern(Block, 2));
        uint third = await TestIo.WriteAsync(_device, 2 * Block, TestIo.Pattern(Block, 3));

        Assert.Equal(DeviceErrorCodes.InjectedFault, first);
        Assert.Equal(DeviceErrorCodes.InjectedFault, second);
        Assert.Equal(DeviceErrorCodes.Success, third);
        Assert.Equal(2, _device.WritesFailed);
        Assert.Equal(1, _device.WritesForwarded);
        Assert.Equal(new byte[2 * Block], await ReadInnerAsync(0, 2 * Block));
        Assert.Equal(TestIo.Pattern(Block, 3), await ReadInnerAsync(2 * Block, Block));
    }

    [Fact]
    public async Task FailNextReads_One_ReadFailsOnceThenSucceeds()
    {
        await TestIo.WriteOkAsync(_device, 0, TestIo.Pattern(Block, 1));
        _device.FailNextReads(1);

        var (failed, _, _) = await TestIo.ReadAsync(_device, 0, Block);
        var retried = await TestIo.ReadOkAsync(_device, 0, Block);

        Assert.Equal(DeviceErrorCodes.InjectedFault, failed);
        Assert.Equal(TestIo.Pattern(Block, 1), retried);
        Assert.Equal(1, _device.ReadsFailed);
    }

    [Fact]
    public async Task WriteFailureProbability_SameSeed_SameFaultPatternAndBothOutcomes()
    {
        var firstRun = await FailurePatternAsync(seed: 42);
        var secondRun = await FailurePatternAsync(seed: 42);
        var otherSeed = await FailurePatternAsync(seed: 43);

        Assert.Equal(firstRun, secondRun);
        Assert.NotEqual(firstRun, otherSeed);
        Assert.Contains(true, firstRun);
        Assert.Contains(false, firstRun);
    }

    [Fact]
    public async Task CutAfter_Four_ForwardsFourWritesAndDropsTheRestWhileAcknowledgingAll()
    {
        _device.CutAfter(4);
        for (int i = 0; i < 10; i++)
        {
            uint errorCode = await TestIo.WriteAsync(_device, (ulong)(i * Block), TestIo.Pattern(Block, i));
            Assert.Equal(DeviceErrorCodes.Success, errorCode);
        }

        Assert.Equal(10, _device.WritesIssued);
        Assert.Equal(4, _device.WritesForwarded);
        Assert.Equal(6, _device.WritesDropped);
        Assert.Equal(4, _device.CutPoint);

        // The owner "crashes"; a new device over the inner storage sees exactly the forwarded writes.
        _device.Dispose();
        using var reopened = new InMemoryDevice(_storage);
        reopened.Initialize(SegmentSize);
        for (int i = 0; i < 10; i++)
        {
            var read = await TestIo.ReadOkAsync(reopened, (ulong)(i * Block), Block);
            Assert.Equal(i < 4 ? TestIo.Pattern(Block, i) : new byte[Block], read);
        }
    }

    [Fact]
    public async Task CutNow_AfterThreeWrites_LaterWritesAndRemovalsAreLost()
    {
        for (int i = 0; i < 3; i++)
        {
            await TestIo.WriteOkAsync(_device, (ulong)(i * SegmentSize), TestIo.Pattern(Block, i));
        }

        _device.CutNow();
        await TestIo.WriteOkAsync(_device, 3 * SegmentSize, TestIo.Pattern(Block, 3));
        _device.RemoveSegment(0);
        await TestIo.RemoveSegmentAsync(_device, 1);

        Assert.Equal([0, 1, 2], _storage.SegmentIds);
        Assert.Equal(1, _device.WritesDropped);
        Assert.Equal(2, _device.RemovesDropped);
    }

    [Fact]
    public async Task CutAfter_PointInThePast_ThrowsAndKeepsForwarding()
    {
        await TestIo.WriteOkAsync(_device, 0, TestIo.Pattern(Block, 1));
        await TestIo.WriteOkAsync(_device, Block, TestIo.Pattern(Block, 2));

        Assert.Throws<ArgumentOutOfRangeException>(() => _device.CutAfter(1));
        Assert.Null(_device.CutPoint);
        await TestIo.WriteOkAsync(_device, 2 * Block, TestIo.Pattern(Block, 3));
        Assert.Equal(3, _device.WritesForwarded);
    }

    [Fact]
    public async Task FailPermanently_EveryOperationFailsUntilClearFaults()
    {
        await TestIo.WriteOkAsync(_device, 0, TestIo.Pattern(Block, 1));

        _device.FailPermanently();
        uint write = await TestIo.WriteAsync(_device, Block, TestIo.Pattern(Block, 2));
        var (read, _, _) = await TestIo.ReadAsync(_device, 0, Block);
        _device.RemoveSegment(0);

        Assert.True(_device.IsFailed);
        Assert.Equal(DeviceErrorCodes.DeviceFailed, write);
        Assert.Equal(DeviceErrorCodes.DeviceFailed, read);
        Assert.True(_storage.ContainsSegment(0));

        _device.ClearFaults();
        Assert.False(_device.IsFailed);
        await TestIo.WriteOkAsync(_device, Block, TestIo.Pattern(Block, 2));
        Assert.Equal(TestIo.Pattern(Block, 1), await TestIo.ReadOkAsync(_device, 0, Block));
    }

    [Fact]
    public async Task FailPermanentlyAfter_Two_ThirdWriteOnwardFailsAndReadsFailToo()
    {
        _device.FailPermanentlyAfter(2);
        await TestIo.WriteOkAsync(_device, 0, TestIo.Pattern(Block, 1));
        Assert.Equal(TestIo.Pattern(Block, 1), await TestIo.ReadOkAsync(_device, 0, Block));
        await TestIo.WriteOkAsync(_device, Block, TestIo.Pattern(Block, 2));

        uint third = await TestIo.WriteAsync(_device, 2 * Block, TestIo.Pattern(Block, 3));
        var (read, _, _) = await TestIo.ReadAsync(_device, 0, Block);

        Assert.Equal(DeviceErrorCodes.DeviceFailed, third);
        Assert.Equal(DeviceErrorCodes.DeviceFailed, read);
        Assert.Equal(2, _device.WritesForwarded);
    }

    [Fact]
    public async Task FailPermanently_TakesPrecedenceOverCut()
    {
        _device.CutNow();
        _device.FailPermanently();

        uint errorCode = await TestIo.WriteAsync(_device, 0, TestIo.Pattern(Block, 1));

        Assert.Equal(DeviceErrorCodes.DeviceFailed, errorCode);
        Assert.Equal(0, _device.WritesDropped);
    }

    [Fact]
    public async Task Dispose_OwnedInner_LaterRequestsReportDisposed()
    {
        _device.Dispose();

        uint write = await TestIo.WriteAsync(_device, 0, TestIo.Pattern(Block, 1));

        Assert.Equal(DeviceErrorCodes.Disposed, write);
        Assert.Empty(_storage.SegmentIds);
    }

    [Fact]
    public void Constructor_ProbabilityOutOfRange_Throws()
    {
        var inner = new InMemoryDevice(new InMemoryStorage());

        Assert.Throws<ArgumentOutOfRangeException>(() => new FaultInjectingDevice(inner, new FaultInjectingDeviceOptions { WriteFailureProbability = 1.5 }));
        Assert.Throws<ArgumentOutOfRangeException>(() => _device.SetFailureProbabilities(0, -0.1));
    }

    private static async Task<bool[]> FailurePatternAsync(int seed)
    {
        using var device = new InMemoryDevice(new InMemoryStorage(), new InMemoryDeviceOptions { CompleteSynchronously = true })
            .WithFaults(new FaultInjectingDeviceOptions { Seed = seed, WriteFailureProbability = 0.3 });
        device.Initialize(SegmentSize);
        var failed = new bool[64];
        for (int i = 0; i < failed.Length; i++)
        {
            failed[i] = await TestIo.WriteAsync(device, (ulong)(i * Block), TestIo.Pattern(Block, i)) != 0;
        }

        return failed;
    }

    private async Task<byte[]> ReadInnerAsync(ulong address, int length)
    {
        using var inner = new InMemoryDevice(_storage);
        inner.Initialize(SegmentSize);
        return await TestIo.ReadOkAsync(inner, address, length);
    }
}
