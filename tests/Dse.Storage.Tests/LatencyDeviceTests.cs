using Dse.Storage.Tests.Infrastructure;
using Microsoft.Extensions.Time.Testing;

namespace Dse.Storage.Tests;

public sealed class LatencyDeviceTests : IDisposable
{
    private const long SegmentSize = 1 << 16;
    private const int Block = 512;

    private readonly FakeTimeProvider _time = new();
    private readonly InMemoryStorage _storage = new();
    private readonly List<NativeBuffer> _buffers = [];

    public void Dispose()
    {
        foreach (var buffer in _buffers)
        {
            buffer.Dispose();
        }
    }

    [Fact]
    public async Task WriteAsync_BeforeLatencyElapses_IsNeitherAcknowledgedNorWritten()
    {
        using var device = Create(new LatencyDeviceOptions { WriteLatency = TimeSpan.FromMilliseconds(100) });

        var write = TestIo.StartWrite(device, 0, Buffer(TestIo.Pattern(Block, 1)));

        Assert.False(write.IsCompleted);
        Assert.Equal(1, device.PendingOperations);
        _time.Advance(TimeSpan.FromMilliseconds(99));
        Assert.False(write.IsCompleted);
        Assert.False(_storage.ContainsSegment(0));

        // FakeTimeProvider fires the timer inside Advance; the inner device completes inline.
        _time.Advance(TimeSpan.FromMilliseconds(1));
        Assert.True(write.IsCompleted);
        Assert.Equal(0u, (await write).ErrorCode);
        Assert.Equal(0, device.PendingOperations);
        Assert.Equal(TestIo.Pattern(Block, 1), await TestIo.ReadOkAsync(device, 0, Block));
    }

    [Fact]
    public async Task ReadAsync_DefaultReadLatency_CompletesWithoutAdvancingTime()
    {
        using var device = Create(new LatencyDeviceOptions { WriteLatency = TimeSpan.FromSeconds(5) });
        var write = TestIo.StartWrite(device, 0, Buffer(TestIo.Pattern(Block, 2)));
        _time.Advance(TimeSpan.FromSeconds(5));
        await write;

        var read = TestIo.StartRead(device, 0, Buffer(new byte[Block]));

        Assert.True(read.IsCompleted);
        Assert.Equal(0u, (await read).ErrorCode);
    }

    [Fact]
    public void ReadAsync_WithReadLatency_CompletesOnlyAfterIt()
    {
        using var device = Create(new LatencyDeviceOptions { ReadLatency = TimeSpan.FromMilliseconds(10) });

        var read = TestIo.StartRead(device, 0, Buffer(new byte[Block]));
        _time.Advance(TimeSpan.FromMilliseconds(9));
        Assert.False(read.IsCompleted);
        _time.Advance(TimeSpan.FromMilliseconds(1));

        Assert.True(read.IsCompleted);
    }

    [Fact]
    public void WriteAsync_WithJitter_CompletesWithinLatencyPlusJitterAndSameSeedSameDelays()
    {
        var firstRun = CompletionTimes(seed: 5);
        var secondRun = CompletionTimes(seed: 5);

        Assert.Equal(firstRun, secondRun);
        Assert.All(firstRun, t => Assert.InRange(t, 10, 20));
        Assert.True(firstRun.Distinct().Count() > 1, "jitter should spread the completion times");
    }

    [Fact]
    public void RemoveSegmentAsync_WithWriteLatency_RemovesOnlyAfterIt()
    {
        _storage.Write(3, 0, TestIo.Pattern(Block, 3));
        using var device = Create(new LatencyDeviceOptions { WriteLatency = TimeSpan.FromMilliseconds(50) });
        bool removed = false;

        device.RemoveSegmentAsync(3, _ => removed = true, null);
        _time.Advance(TimeSpan.FromMilliseconds(49));
        Assert.False(removed);
        Assert.True(_storage.ContainsSegment(3));
        _time.Advance(TimeSpan.FromMilliseconds(1));

        Assert.True(removed);
        Assert.False(_storage.ContainsSegment(3));
    }

    [Fact]
    public async Task Dispose_WithPendingWrite_CompletesItWithDisposedAndNeverWrites()
    {
        var device = Create(new LatencyDeviceOptions { WriteLatency = TimeSpan.FromSeconds(1) });
        var write = TestIo.StartWrite(device, 0, Buffer(TestIo.Pattern(Block, 4)));

        device.Dispose();
        _time.Advance(TimeSpan.FromSeconds(2));

        Assert.Equal(DeviceErrorCodes.Disposed, (await write).ErrorCode);
        Assert.False(_storage.ContainsSegment(0));
    }

    [Fact]
    public async Task SnapshotLog_OnLatencyDevice_AppendCompletesOnlyAfterTimeAdvances()
    {
        using var device = Create(new LatencyDeviceOptions { WriteLatency = TimeSpan.FromMilliseconds(20) });

        // Recovery only reads, which are not delayed.
        var log = await SnapshotLog.OpenAsync(device, new SnapshotLogOptions { SegmentSize = SegmentSize });
        var append = log.AppendAsync(1, TestIo.Pattern(100, 1)).AsTask();
        Assert.False(append.IsCompleted);

        _time.Advance(TimeSpan.FromMilliseconds(20));
        await append.WaitAsync(TestIo.Timeout);

        Assert.Single(log.Records);
        await log.DisposeAsync();
    }

    [Fact]
    public void Constructor_NegativeLatency_Throws()
    {
        Assert.Throws<ArgumentOutOfRangeException>(() => Create(new LatencyDeviceOptions { WriteLatency = TimeSpan.FromMilliseconds(-1) }));
    }

    private int[] CompletionTimes(int seed)
    {
        var time = new FakeTimeProvider();
        using var device = new InMemoryDevice(new InMemoryStorage(), new InMemoryDeviceOptions { CompleteSynchronously = true })
            .WithLatency(new LatencyDeviceOptions
            {
                WriteLatency = TimeSpan.FromMilliseconds(10),
                Jitter = TimeSpan.FromMilliseconds(10),
                Seed = seed,
                TimeProvider = time,
            });
        device.Initialize(SegmentSize);
        var writes = Enumerable.Range(0, 8).Select(i => TestIo.StartWrite(device, (ulong)(i * Block), Buffer(TestIo.Pattern(Block, i)))).ToArray();
        var completedAt = new int[writes.Length];
        for (int ms = 1; ms <= 21; ms++)
        {
            time.Advance(TimeSpan.FromMilliseconds(1));
            for (int i = 0; i < writes.Length; i++)
            {
                if (writes[i].IsCompleted && completedAt[i] == 0)
                {
                    completedAt[i] = ms;
                }
            }
        }

        return completedAt;
    }

    private LatencyDevice Create(LatencyDeviceOptions options)
    {
        options.TimeProvider = _time;
        var device = new InMemoryDevice(_storage, new InMemoryDeviceOptions { CompleteSynchronously = true }).WithLatency(options);
        device.Initialize(SegmentSize);
        return device;
    }

    private NativeBuffer Buffer(byte[] data)
    {
        var buffer = NativeBuffer.From(data);
        _buffers.Add(buffer);
        return buffer;
    }
}
