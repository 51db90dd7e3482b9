using Dse.Storage.Tests.Infrastructure;
using FASTER.core;

namespace Dse.Storage.Tests;

/// <summary>The behaviour every DSE device must show; one derived class per device kind runs it.</summary>
public abstract class DeviceContractTests : IAsyncLifetime
{
    protected const long SegmentSize = 1 << 16;
    private const int Block = 4096;

    private DeviceHarness _harness = null!;

    protected DeviceHarness Harness => _harness;

    public Task InitializeAsync()
    {
        _harness = CreateHarness();
        return Task.CompletedTask;
    }

    public async Task DisposeAsync() => await _harness.DisposeAsync();

    [Fact]
    public async Task WriteAsync_AlignedBlocksAcrossSegments_ReadAsyncReturnsSameBytes()
    {
        var device = OpenInitialized();
        var writes = Layout();

        foreach (var (address, data) in writes)
        {
            await TestIo.WriteOkAsync(device, address, data);
        }

        foreach (var (address, data) in writes)
        {
            Assert.Equal(data, await TestIo.ReadOkAsync(device, address, data.Length));
        }
    }

    [Fact]
    public async Task Open_NewInstanceAfterDispose_SeesEarlierWrites()
    {
        var writer = OpenInitialized();
        var writes = Layout();
        foreach (var (address, data) in writes)
        {
            await TestIo.WriteOkAsync(writer, address, data);
        }

        Harness.Close(writer);

        var reader = OpenInitialized();
        foreach (var (address, data) in writes)
        {
            Assert.Equal(data, await TestIo.ReadOkAsync(reader, address, data.Length));
        }
    }

    [Fact]
    public async Task WriteAsync_OverwriteSameAddress_LastWriteWins()
    {
        var device = OpenInitialized();
        await TestIo.WriteOkAsync(device, 8192, TestIo.Pattern(Block, 1));
        await TestIo.WriteOkAsync(device, 8192, TestIo.Pattern(Block, 2));

        Assert.Equal(TestIo.Pattern(Block, 2), await TestIo.ReadOkAsync(device, 8192, Block));
    }

    [Fact]
    public async Task RemoveSegment_OneOfTwoSegments_RemovesOnlyThatOneDurably()
    {
        var device = OpenInitialized();
        var first = TestIo.Pattern(Block, 10);
        var second = TestIo.Pattern(Block, 11);
        await TestIo.WriteOkAsync(device, 0, first);
        await TestIo.WriteOkAsync(device, (ulong)SegmentSize, second);

        device.RemoveSegment(0);

        await AssertNoDataAsync(device, 0, Block);
        Assert.Equal(second, await TestIo.ReadOkAsync(device, (ulong)SegmentSize, Block));

        Harness.Close(device);
        var reopened = OpenInitialized();
        await AssertNoDataAsync(reopened, 0, Block);
        Assert.Equal(second, await TestIo.ReadOkAsync(reopened, (ulong)SegmentSize, Block));
    }

    [Fact]
    public async Task RemoveSegmentAsync_WrittenSegment_InvokesCallbackAndRemovesData()
    {
        var device = OpenInitialized();
        var third = TestIo.Pattern(Block, 12);
        await TestIo.WriteOkAsync(device, 2 * (ulong)SegmentSize, third);
        await TestIo.WriteOkAsync(device, 3 * (ulong)SegmentSize, third);

        await TestIo.RemoveSegmentAsync(device, 2);

        await AssertNoDataAsync(device, 2 * (ulong)SegmentSize, Block);
        Assert.Equal(third, await TestIo.ReadOkAsync(device, 3 * (ulong)SegmentSize, Block));
    }

    [Fact]
    public async Task RemoveSegment_RemovedSegmentWrittenAgain_HoldsOnlyNewData()
    {
        var device = OpenInitialized();
        await TestIo.WriteOkAsync(device, 0, TestIo.Pattern(Block, 20));
        await TestIo.WriteOkAsync(device, Block, TestIo.Pattern(Block, 21));
        device.RemoveSegment(0);

        var fresh = TestIo.Pattern(Block, 22);
        await TestIo.WriteOkAsync(device, 0, fresh);

        Assert.Equal(fresh, await TestIo.ReadOkAsync(device, 0, Block));
        var (errorCode, bytes, data) = await TestIo.ReadAsync(device, Block, Block);
        Assert.True(errorCode != 0 || bytes == 0 || data.All(b => b == 0), "the old block must not come back after the segment was removed");
    }

    [Fact]
    public async Task WriteAsync_ManyConcurrentWriters_AllWritesLand()
    {
        var device = OpenInitialized();
        const int writers = 4;
        const int writesPerWriter = 8;
        using var start = new SemaphoreSlim(0, writers);

        var tasks = Enumerable.Range(0, writers).Select(writer => Task.Run(async () =>
        {
            await start.WaitAsync();
            var pending = new List<(NativeBuffer Buffer, Task<(uint ErrorCode, uint Bytes)> Completion)>();
            for (int i = 0; i < writesPerWriter; i++)
            {
                var buffer = NativeBuffer.From(TestIo.Pattern(Block, (writer * 100) + i));
                pending.Add((buffer, TestIo.StartWrite(device, Address(writer, i), buffer)));
            }

            foreach (var (buffer, completion) in pending)
            {
                var (errorCode, _) = await completion.WaitAsync(TestIo.Timeout);
                buffer.Dispose();
                Assert.Equal(0u, errorCode);
            }
        })).ToArray();
        start.Release(writers);
        await Task.WhenAll(tasks);

        for (int writer = 0; writer < writers; writer++)
        {
            for (int i = 0; i < writesPerWriter; i++)
            {
                Assert.Equal(TestIo.Pattern(Block, (writer * 100) + i), await TestIo.ReadOkAsync(device, Address(writer, i), Block));
            }
        }

        // Writers interleave inside a segment and spill into the next one.
        static ulong Address(int writer, int i) => (ulong)(((i * writers) + writer) * Block) + (ulong)(SegmentSize - (8 * Block));
    }

    [Fact]
    public async Task ReadAsync_NeverWrittenSegment_ReportsNoData()
    {
        var device = OpenInitialized();
        await TestIo.WriteOkAsync(device, 0, TestIo.Pattern(Block, 30));

        await AssertNoDataAsync(device, 7 * (ulong)SegmentSize, Block);
    }

    [Fact]
    public async Task ReadAsync_MisalignedAddress_ReportsErrorOrReadsExactBytes()
    {
        var device = OpenInitialized();
        var data = TestIo.Pattern(Block, 40);
        await TestIo.WriteOkAsync(device, 0, data);

        var (errorCode, bytes, read) = await TestIo.ReadAsync(device, 100, 512);

        if (Harness.RejectsMisalignedRequests)
        {
            Assert.Equal(DeviceErrorCodes.InvalidArgument, errorCode);
            Assert.Equal(0u, bytes);
        }
        else
        {
            // Buffered local files accept any offset; then the bytes must be exactly the ones at that offset.
            Assert.Equal(0u, errorCode);
            Assert.Equal(data.AsSpan(100, 512).ToArray(), read);
        }
    }

    [Fact]
    public async Task FasterLog_CommitThenReopenOnNewDevice_RecoversEveryEntry()
    {
        using var commitDirectory = new TempDirectory();
        var entries = Enumerable.Range(0, 200).Select(i => TestIo.Pattern(100 + (i * 7 % 900), i)).ToList();

        var device = Harness.Open();
        using (var settings = FasterSettings(device, commitDirectory.Path))
        using (var log = new FasterLog(settings))
        {
            foreach (var entry in entries)
            {
                log.Enqueue(entry);
            }

            await log.CommitAsync().AsTask().WaitAsync(TestIo.Timeout);
        }

        Harness.Close(device);

        var reopened = Harness.Open();
        using var reopenedSettings = FasterSettings(reopened, commitDirectory.Path);
        using var recovered = new FasterLog(reopenedSettings);
        var read = new List<byte[]>();
        using (var iterator = recovered.Scan(recovered.BeginAddress, recovered.TailAddress))
        {
            while (iterator.GetNext(out byte[] entry, out int length, out _, out _))
            {
                read.Add(entry.AsSpan(0, length).ToArray());
            }
        }

        Assert.Equal(entries.Count, read.Count);
        for (int i = 0; i < entries.Count; i++)
        {
            Assert.Equal(entries[i], read[i]);
        }
    }

    protected abstract DeviceHarness CreateHarness();

    protected IDevice OpenInitialized()
    {
        var device = Harness.Open();
        device.Initialize(SegmentSize);
        return device;
    }

    /// <summary>A read of removed or never-written space must not return old data: an error, no bytes, or zeros.</summary>
    private static async Task AssertNoDataAsync(IDevice device, ulong address, int length)
    {
        var (errorCode, bytes, data) = await TestIo.ReadAsync(device, address, length);
        Assert.True(errorCode != 0 || bytes == 0 || data.All(b => b == 0),
            $"expected no data at {address}, got {bytes} bytes with error code {errorCode}");
    }

    private static FasterLogSettings FasterSettings(IDevice device, string commitDirectory) => new()
    {
        LogDevice = device,
        LogCommitDir = commitDirectory,
        PageSize = 1 << 14,
        MemorySize = 1 << 16,
        SegmentSize = 1 << 16,
    };

    /// <summary>Blocks at the start of a segment, at its end, at the start of the next, and one segment further away.</summary>
    private static List<(ulong Address, byte[] Data)> Layout() =>
    [
        (0, TestIo.Pattern(Block, 1)),
        ((ulong)SegmentSize - Block, TestIo.Pattern(Block, 2)),
        ((ulong)SegmentSize, TestIo.Pattern(2 * Block, 3)),
        ((3 * (ulong)SegmentSize) + (2 * Block), TestIo.Pattern(Block, 4)),
    ];
}
