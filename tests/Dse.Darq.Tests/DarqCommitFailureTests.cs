namespace Dse.Darq.Tests;

/// <summary>
/// A failed commit-record write is retried, a persistent failure is reported, and nothing hangs.
/// Faults come from the commit device; the bounded waits only turn a hang into a failure.
/// </summary>
[Trait("Category", "Recovery")]
public sealed class DarqCommitFailureTests
{
    private static readonly TimeSpan Guard = TimeSpan.FromSeconds(20);

    [Fact]
    public async Task CommitAsync_CommitRecordWriteFailsOnce_RetriedAndDurable()
    {
        var storage = new DarqTestStorage();
        await using (var darq = await storage.OpenAsync())
        {
            var a = await darq.EnqueueAsync("a".Bytes());
            storage.CommitFaults!.FailNextWrites(1);

            await darq.CommitAsync().AsTask().WaitAsync(Guard);

            Assert.Equal(1, storage.CommitFaults.WritesFailed);
            Assert.True(darq.CommittedUntilAddress >= a.DurableAt);
            storage.CrashNow();
        }

        await using var reopened = await storage.OpenAsync();
        Assert.Equal(["a"], (await reopened.RegisterProcessorAsync()).Drain().Select(m => m.Text()));
    }

    [Fact]
    public async Task CommitAsync_SecondCommitWhileFirstRetries_BothCompleteAndDisposeReturns()
    {
        var storage = new DarqTestStorage();
        var darq = await storage.OpenAsync();
        await darq.EnqueueAsync("a".Bytes());
        storage.CommitFaults!.FailNextWrites(2);
        var first = darq.CommitAsync().AsTask();
        await darq.EnqueueAsync("b".Bytes());
        var second = darq.CommitAsync().AsTask();

        await Task.WhenAll(first, second).WaitAsync(Guard);
        await darq.DisposeAsync().AsTask().WaitAsync(Guard);

        Assert.Equal(2, storage.CommitFaults.WritesFailed);
        await using var reopened = await storage.OpenAsync();
        Assert.Equal(["a", "b"], (await reopened.RegisterProcessorAsync()).Drain().Select(m => m.Text()));
    }

    [Fact]
    public async Task WaitForCommitAsync_BackgroundCommitRecordWriteFailsOnce_Completes()
    {
        var storage = new DarqTestStorage();
        await using var darq = await storage.OpenAsync(o => o.CommitInterval = TimeSpan.FromMilliseconds(2));

        // Nothing changed since open, so no background commit writes a record before the enqueue.
        storage.CommitFaults!.FailNextWrites(1);
        var a = await darq.EnqueueAsync("a".Bytes());

        await darq.WaitForCommitAsync(a.DurableAt).AsTask().WaitAsync(Guard);
        Assert.Equal(1, storage.CommitFaults.WritesFailed);
    }

    [Fact]
    public async Task CommitAsync_CommitDeviceFailsPermanently_IOExceptionThenCommitsOnceTheDeviceRecovers()
    {
        var storage = new DarqTestStorage();
        await using (var darq = await storage.OpenAsync())
        {
            storage.CommitFaults!.FailPermanently();
            var a = await darq.EnqueueAsync("a".Bytes());

            var error = await Assert.ThrowsAsync<IOException>(() => darq.CommitAsync().AsTask().WaitAsync(Guard));
            Assert.Contains("keeps failing", error.Message, StringComparison.Ordinal);
            await Assert.ThrowsAsync<IOException>(() => darq.WaitForCommitAsync(a.DurableAt).AsTask().WaitAsync(Guard));
            Assert.True(darq.CommittedUntilAddress < a.DurableAt);

            storage.CommitFaults.ClearFaults();

            // An attempt decided before ClearFaults may still report its failure to a commit issued just after it; the
            // one after that writes to the recovered device.
            for (int attempt = 1; ; attempt++)
            {
                try
                {
                    await darq.CommitAsync().AsTask().WaitAsync(Guard);
                    break;
                }
                catch (IOException) when (attempt < 3)
                {
                }
            }

            Assert.True(darq.CommittedUntilAddress >= a.DurableAt);
        }

        await using var reopened = await storage.OpenAsync();
        Assert.Equal(["a"], (await reopened.RegisterProcessorAsync()).Drain().Select(m => m.Text()));
    }

    [Fact]
    public async Task DisposeAsync_CommitDeviceFailsPermanently_ReturnsAndNothingUncommittedSurvives()
    {
        var storage = new DarqTestStorage();
        var darq = await storage.OpenAsync();
        await darq.EnqueueAsync("committed".Bytes());
        await darq.CommitAsync();
        storage.CommitFaults!.FailPermanently();
        await darq.EnqueueAsync("lost".Bytes());

        await darq.DisposeAsync().AsTask().WaitAsync(Guard);

        await using var reopened = await storage.OpenAsync();
        Assert.Equal(["committed"], (await reopened.RegisterProcessorAsync()).Drain().Select(m => m.Text()));
    }

    [Fact]
    public async Task BackgroundCommit_CommitDeviceFailsPermanentlyThenRecovers_LaterEnqueueBecomesDurable()
    {
        var storage = new DarqTestStorage();
        await using var darq = await storage.OpenAsync(o => o.CommitInterval = TimeSpan.FromMilliseconds(2));
        storage.CommitFaults!.FailPermanently();
        var a = await darq.EnqueueAsync("a".Bytes());
        await Assert.ThrowsAsync<IOException>(() => darq.WaitForCommitAsync(a.DurableAt).AsTask().WaitAsync(Guard));

        storage.CommitFaults.ClearFaults();
        var b = await darq.EnqueueAsync("b".Bytes());
        for (int attempt = 1; ; attempt++)
        {
            try
            {
                await darq.WaitForCommitAsync(b.DurableAt).AsTask().WaitAsync(Guard);
                break;
            }
            catch (IOException) when (attempt < 3)
            {
            }
        }

        Assert.True(darq.CommittedUntilAddress >= b.DurableAt);
    }
}
