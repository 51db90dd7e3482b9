using Dse.Storage;

namespace Dse.Darq.Tests;

/// <summary>Opening a DARQ that fails releases what it owns.</summary>
[Trait("Category", "Recovery")]
public sealed class DarqOpenFailureTests
{
    [Fact]
    public async Task OpenAsync_CommitSlotReadFails_IOExceptionAndOwnedDevicesDisposed()
    {
        var storage = new DarqTestStorage();
        await using (var darq = await storage.OpenAsync())
        {
            await darq.EnqueueAsync("a".Bytes());
        }

        var commits = new FaultInjectingDevice(DseDevices.CreateInMemory(storage.Commits));
        commits.FailNextReads(1);
        var log = new DisposeTrackingDevice(DseDevices.CreateInMemory(storage.Log));
        var commit = new DisposeTrackingDevice(commits);

        var error = await Assert.ThrowsAsync<IOException>(() => Darq.OpenAsync(DarqTestStorage.Options(log, commit)));

        Assert.Contains("commit slot", error.Message, StringComparison.Ordinal);
        Assert.True(log.Disposed);
        Assert.True(commit.Disposed);

        // The failed read did not make the DARQ open empty: the committed message is still there.
        await using var reopened = await storage.OpenAsync();
        Assert.Equal(1, reopened.UnconsumedCount);
    }
}
