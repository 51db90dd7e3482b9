using Dse.Storage.Tests.Infrastructure;

namespace Dse.Storage.Tests;

public sealed class InMemoryStorageTests
{
    [Fact]
    public void TryRead_PastWrittenLength_ReturnsZerosForTheRest()
    {
        var storage = new InMemoryStorage();
        storage.Write(0, 10, [1, 2, 3]);
        var destination = Enumerable.Repeat((byte)0xFF, 20).ToArray();

        Assert.True(storage.TryRead(0, 8, destination));

        Assert.Equal(new byte[] { 0, 0, 1, 2, 3 }, destination[..5]);
        Assert.All(destination[5..], b => Assert.Equal(0, b));
        Assert.True(storage.TryGetSegmentLength(0, out long length));
        Assert.Equal(13, length);
    }

    [Fact]
    public void TryRead_MissingSegment_ReturnsFalse()
    {
        var storage = new InMemoryStorage();

        Assert.False(storage.TryRead(4, 0, new byte[8]));
        Assert.False(storage.TryGetSegmentLength(4, out _));
    }

    [Fact]
    public void RemoveSegment_Existing_RemovesOnlyIt()
    {
        var storage = new InMemoryStorage();
        storage.Write(1, 0, [1]);
        storage.Write(2, 0, [2]);

        Assert.True(storage.RemoveSegment(1));
        Assert.False(storage.RemoveSegment(1));

        Assert.Equal([2], storage.SegmentIds);
        Assert.Equal(1, storage.TotalBytes);
    }

    [Fact]
    public void Clone_ThenWriteOriginal_CloneKeepsPointInTimeImage()
    {
        var storage = new InMemoryStorage();
        storage.Write(0, 0, [1, 2, 3]);

        var image = storage.Clone();
        storage.Write(0, 0, [9, 9, 9]);
        storage.Write(1, 0, [7]);

        var read = new byte[3];
        Assert.True(image.TryRead(0, 0, read));
        Assert.Equal(new byte[] { 1, 2, 3 }, read);
        Assert.Equal([0], image.SegmentIds);
    }

    [Fact]
    public void Write_NegativeOffset_Throws()
    {
        var storage = new InMemoryStorage();

        Assert.Throws<ArgumentOutOfRangeException>(() => storage.Write(0, -1, [1]));
        Assert.Throws<ArgumentOutOfRangeException>(() => storage.Write(-1, 0, [1]));
    }

    [Fact]
    public async Task Write_ConcurrentWritersGrowingSegments_EveryWriteLands()
    {
        var storage = new InMemoryStorage();
        var go = new TaskCompletionSource(TaskCreationOptions.RunContinuationsAsynchronously);
        var writers = Enumerable.Range(0, 4).Select(writer => Task.Run(async () =>
        {
            await go.Task;
            for (int i = 0; i < 500; i++)
            {
                // Interleaved slots, so that every writer keeps growing the same two segments.
                storage.Write(i % 2, ((i * 4L) + writer) * 8, BitConverter.GetBytes((i * 4L) + writer));
            }
        })).ToArray();
        go.SetResult();
        await Task.WhenAll(writers).WaitAsync(TestIo.Timeout);

        var slot = new byte[8];
        for (long value = 0; value < 2000; value++)
        {
            Assert.True(storage.TryRead((int)(value / 4 % 2), value * 8, slot));
            Assert.Equal(value, BitConverter.ToInt64(slot));
        }
    }

    [Fact]
    public async Task InMemoryDevice_WriteCrossingSegmentEnd_ReportsInvalidArgument()
    {
        using var device = new InMemoryDevice(new InMemoryStorage());
        device.Initialize(4096);

        // Segment-relative write that runs past the segment's end (the base class only splits addresses, not lengths).
        using var buffer = NativeBuffer.From(TestIo.Pattern(1024, 1));
        var completion = new TaskCompletionSource<uint>(TaskCreationOptions.RunContinuationsAsynchronously);
        device.WriteAsync(buffer.Pointer, 0, 3584, 1024, (errorCode, _, _) => completion.TrySetResult(errorCode), null!);

        Assert.Equal(DeviceErrorCodes.InvalidArgument, await completion.Task.WaitAsync(TestIo.Timeout));
    }

    [Fact]
    public void InMemoryDevice_OverExistingStorage_ReportsItsSegmentRange()
    {
        var storage = new InMemoryStorage();
        storage.Write(2, 0, new byte[512]);
        storage.Write(5, 0, new byte[512]);

        using var device = new InMemoryDevice(storage);

        Assert.Equal(2, device.StartSegment);
        Assert.Equal(5, device.EndSegment);
    }

    [Fact]
    public void InMemoryDevice_InvalidSectorSize_Throws()
    {
        Assert.Throws<ArgumentOutOfRangeException>(() => new InMemoryDevice(new InMemoryStorage(), new InMemoryDeviceOptions { SectorSize = 100 }));
    }
}
