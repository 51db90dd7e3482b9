using Dse.Coordinator.Tests.Infrastructure;

namespace Dse.Coordinator.Tests;

/// <summary>What the deterministic simulation relies on: synchronous completion and a store that outlives instances.</summary>
[Trait("Category", "Simulation")]
public sealed class InMemoryCoordinatorLogTests
{
    [Fact]
    public async Task AppendAsync_OpenLog_CompletesSynchronously()
    {
        var store = new InMemoryCoordinatorLogStore();
        await using var log = new InMemoryCoordinatorLog(store);

        var open = log.OpenAsync();
        var append = log.AppendAsync(Frames.Bytes("membership"));

        Assert.True(open.IsCompletedSuccessfully);
        Assert.True(append.IsCompletedSuccessfully);
        Assert.Equal(1, store.RecordCount);
    }

    [Fact]
    public async Task AppendAsync_FencedInstance_FailsSynchronouslyAndStoreKeepsOnlyTheNewcomersRecords()
    {
        var store = new InMemoryCoordinatorLogStore();
        await using var old = new InMemoryCoordinatorLog(store);
        await old.OpenAsync();
        await old.AppendAsync(Frames.Bytes("old"));
        await using var current = new InMemoryCoordinatorLog(store);
        await current.OpenAsync();

        var fenced = old.AppendAsync(Frames.Bytes("zombie"));
        await current.AppendAsync(Frames.Bytes("current"));

        Assert.True(fenced.IsFaulted);
        Assert.IsType<CoordinatorLogFencedException>(fenced.Exception!.InnerException);
        Assert.Equal(2, store.Generation);
        Assert.Equal(["old", "current"], Frames.Texts(store.GetRecords()));
    }

    [Fact]
    public async Task AppendAsync_CallerReusesItsBuffer_StoreKeepsACopy()
    {
        var store = new InMemoryCoordinatorLogStore();
        await using var log = new InMemoryCoordinatorLog(store);
        await log.OpenAsync();
        byte[] buffer = Frames.Bytes("first");

        await log.AppendAsync(buffer);
        buffer[0] = (byte)'X';

        Assert.Equal(["first"], Frames.Texts(store.GetRecords()));
    }
}
