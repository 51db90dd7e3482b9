using System.Globalization;
using System.Text;
using Dse.Darq.TestHost;
using Dse.Storage;
using Dse.Testing;
using Xunit.Abstractions;

namespace Dse.Darq.Tests;

/// <summary>Exclusive storage (<see cref="DarqOptions.ExclusiveStorage"/>) on local files: one instance at a time, in process and across processes.</summary>
[Trait("Category", "Recovery")]
public sealed class DarqLocalFileFencingTests : IDisposable
{
    private const long Producer = 11;

    private readonly string _directory = Path.Combine(Path.GetTempPath(), "dse-darq-fence-" + Guid.NewGuid().ToString("N"));

    public void Dispose()
    {
        if (Directory.Exists(_directory))
        {
            Directory.Delete(_directory, recursive: true);
        }
    }

    [Fact]
    public async Task OpenAsync_SecondInstanceWhileFirstLives_RefusedNamingTheLockAndFirstKeepsItsData()
    {
        await using (var first = await Darq.OpenAsync(HostStorage.LocalFiles(_directory)))
        {
            await EnqueueAsync(first, 1, 5);
            await first.CommitAsync();

            var refused = await Assert.ThrowsAsync<StorageFencedException>(() => Darq.OpenAsync(HostStorage.LocalFiles(_directory)));
            Assert.Contains("DARQ 'host' cannot open", refused.Message, StringComparison.Ordinal);
            Assert.Contains(StorageFence.LockFilePath(Path.Combine(_directory, "darq.log")), refused.Message, StringComparison.Ordinal);
            Assert.Contains("owned by another instance", refused.Message, StringComparison.Ordinal);

            // The refused open changed nothing: the first instance goes on appending and committing.
            await EnqueueAsync(first, 6, 8);
            await first.CommitAsync();
        }

        // Disposed: the next open works and holds exactly what the first instance wrote.
        await using var reopened = await Darq.OpenAsync(HostStorage.LocalFiles(_directory));
        var processor = await reopened.RegisterProcessorAsync();
        Assert.Equal(Enumerable.Range(1, 8).Select(Text), processor.Drain().Select(m => Encoding.UTF8.GetString(m.Payload.Span)));
        Assert.True((await reopened.EnqueueAsync(Producer, 8, Text(8).Bytes())).IsDuplicate);
    }

    [Fact]
    public async Task OpenAsync_SameCommitFilesOtherLog_RefusedNamingTheCommitLock()
    {
        await using var first = await Darq.OpenAsync(HostStorage.LocalFiles(_directory));
        var options = HostStorage.Options(
            DseDevices.CreateLocalFile(Path.Combine(_directory, "other.log")),
            DseDevices.CreateLocalFile(Path.Combine(_directory, "darq.commit")));

        var refused = await Assert.ThrowsAsync<StorageFencedException>(() => Darq.OpenAsync(options));

        Assert.Contains(StorageFence.LockFilePath(Path.Combine(_directory, "darq.commit")), refused.Message, StringComparison.Ordinal);

        // Its log's lock was given back: another open of that log alone is not refused for it.
        await using var fence = await StorageFence.AcquireAsync(DseDevices.CreateLocalFile(Path.Combine(_directory, "other.log")));
    }

    [Fact]
    public async Task OpenAsync_ExclusiveStorageOff_TakesNoLock()
    {
        await using var unfenced = await Darq.OpenAsync(Exclusive(HostStorage.LocalFiles(_directory), false));

        // Nothing held: a fenced instance opens beside it (which is why the default is on).
        await using var fenced = await Darq.OpenAsync(HostStorage.LocalFiles(_directory));
        Assert.True(File.Exists(StorageFence.LockFilePath(Path.Combine(_directory, "darq.log"))));
    }

    [Fact]
    [Trait("Category", "MultiProcess")]
    public async Task OpenAsync_WhileAnotherProcessHoldsTheDarq_RefusedUntilThatProcessIsKilledNine()
    {
        var ready = new TaskCompletionSource(TaskCreationOptions.RunContinuationsAsynchronously);

        // Paced and never granted a batch: the host opens the DARQ, registers its processor and waits.
        await using var host = DarqHostProcess.Start(["--dir", _directory, "--count", "10", "--paced"], line =>
        {
            if (line.StartsWith("READY", StringComparison.Ordinal))
            {
                ready.TrySetResult();
            }
        });
        await Task.WhenAny(ready.Task, host.Completion).WaitAsync(TimeSpan.FromSeconds(60));
        Assert.True(ready.Task.IsCompleted, $"the host did not get ready: {host.Describe()}");

        var refused = await Assert.ThrowsAsync<StorageFencedException>(() => Darq.OpenAsync(HostStorage.LocalFiles(_directory)));
        Assert.Contains("owned by another instance", refused.Message, StringComparison.Ordinal);

        // kill -9: no dispose ran, yet the kernel dropped the lock with the process.
        await host.KillHardAsync();
        await using var darq = await Darq.OpenAsync(HostStorage.LocalFiles(_directory));
        var processor = await darq.RegisterProcessorAsync();
        Assert.Equal(2, processor.Incarnation);
    }

    private static DarqOptions Exclusive(DarqOptions options, bool exclusive)
    {
        options.ExclusiveStorage = exclusive;
        return options;
    }

    private static string Text(int value) => "m" + value.ToString(CultureInfo.InvariantCulture);

    private static async Task EnqueueAsync(Darq darq, int first, int last)
    {
        for (int value = first; value <= last; value++)
        {
            Assert.False((await darq.EnqueueAsync(Producer, value, Text(value).Bytes())).IsDuplicate);
        }
    }
}

/// <summary>Exclusive storage on page blobs (Azurite): a new instance takes over, the old one is fenced and loses nothing of the new one's.</summary>
[Collection(DarqAzuriteCollection.Name)]
[Trait("Category", "Recovery")]
[Trait("Category", "Azure")]
public sealed class DarqPageBlobFencingTests(AzuriteFixture azurite, ITestOutputHelper output) : IAsyncLifetime
{
    private const long Producer = 12;

    private readonly string _container = "darq-fence-" + Guid.NewGuid().ToString("N");

    public Task InitializeAsync() => Task.CompletedTask;

    public async Task DisposeAsync() => await new Azure.Storage.Blobs.BlobContainerClient(azurite.ConnectionString, _container).DeleteIfExistsAsync();

    [Fact]
    public async Task OpenAsync_SecondInstanceTakesOver_FirstInstanceIsFencedAndWritesNothingAfterwards()
    {
        var old = await Darq.OpenAsync(Options());
        try
        {
            await EnqueueAsync(old, "old", 1, 5);
            await old.CommitAsync();
            var oldProcessor = await old.RegisterProcessorAsync();
            var oldFirst = oldProcessor.Drain()[0];

            // The old instance keeps running (a partition, a second process started by mistake); the new one takes over.
            await using (var taker = await Darq.OpenAsync(Options()))
            {
                Assert.Equal(5, taker.UnconsumedCount);

                // The old instance appends into its memory, but its commit is refused: fenced, with a clear error.
                await old.EnqueueAsync(Producer, 6, "old6".Bytes());
                var fenced = await Assert.ThrowsAsync<StorageFencedException>(() => old.CommitAsync().AsTask());
                output.WriteLine(fenced.Message);
                Assert.Contains("fenced", fenced.Message, StringComparison.Ordinal);
                Assert.Contains("another instance", fenced.Message, StringComparison.Ordinal);

                // From then on it refuses appends too, a consume-only step included (its fast path checks the lease fences).
                var refused = await Assert.ThrowsAsync<StorageFencedException>(() => old.EnqueueAsync(Producer, 7, "old7".Bytes()).AsTask());
                Assert.Contains("DARQ 'host' was fenced", refused.Message, StringComparison.Ordinal);
                long tail = old.TailAddress;
                int unconsumed = old.UnconsumedCount;
                var stepRefused = await Assert.ThrowsAsync<StorageFencedException>(() => oldProcessor.StepAsync(new DarqStep().Consume(oldFirst)).AsTask());
                Assert.Contains("DARQ 'host' was fenced", stepRefused.Message, StringComparison.Ordinal);
                Assert.Equal(tail, old.TailAddress);
                Assert.Equal(unconsumed, old.UnconsumedCount);

                // The new owner is untouched by all that.
                await EnqueueAsync(taker, "new", 6, 8);
                await taker.CommitAsync();
            }

            // Closing the fenced instance neither hangs nor writes.
            await old.DisposeAsync();
        }
        finally
        {
            await old.DisposeAsync();
        }

        // Reopened: the old instance's writes up to the takeover, then the new owner's; nothing the old one tried after.
        await using var reopened = await Darq.OpenAsync(Options());
        var processor = await reopened.RegisterProcessorAsync();
        string[] expected = ["old1", "old2", "old3", "old4", "old5", "new6", "new7", "new8"];
        Assert.Equal(expected, processor.Drain().Select(m => Encoding.UTF8.GetString(m.Payload.Span)));
        Assert.True((await reopened.EnqueueAsync(Producer, 8, "again".Bytes())).IsDuplicate);
        Assert.False((await reopened.EnqueueAsync(Producer, 9, "new9".Bytes())).IsDuplicate);
    }

    [Fact]
    public async Task DeliveryLoop_InstanceFenced_StopsWithOneErrorAndFailsDeliveryWaiters()
    {
        var logs = new LogCapture();
        var options = Options();
        options.Destinations = new UnreachableDestinations();
        var old = await Darq.OpenAsync(options, logs);
        try
        {
            var processor = await old.RegisterProcessorAsync();
            var step = await processor.StepAsync(new DarqStep().AddOut("elsewhere", "out".Bytes()));
            await old.CommitAsync();
            var waiter = old.WaitForDeliveredAsync(step.OutLsns[0]).AsTask();

            await using (var taker = await Darq.OpenAsync(Options()))
            {
                Assert.Equal(1, taker.PendingOutCount);

                // The old instance learns of the takeover at its next write.
                await old.EnqueueAsync(Producer, 1, "late".Bytes());
                await Assert.ThrowsAsync<StorageFencedException>(() => old.CommitAsync().AsTask());

                // Its delivery stops: the waiter gets the fencing error instead of waiting for an acknowledgement that
                // can never be recorded (the time limit only turns a hang into a failure).
                var refused = await Assert.ThrowsAsync<StorageFencedException>(() => waiter.WaitAsync(TimeSpan.FromSeconds(60)));
                output.WriteLine(refused.Message);
                Assert.Contains("fenced", refused.Message, StringComparison.Ordinal);
                await Assert.ThrowsAsync<StorageFencedException>(() => old.WaitForDeliveredAsync(step.OutLsns[0]).AsTask());
            }

            // One error says so; the loop does not go on logging failed passes.
            Assert.Single(logs.Entries, e => e.EventId.Id == 4267);
            Assert.DoesNotContain(logs.Entries, e => e.EventId.Id == 4013 && e.Exception is StorageFencedException);
        }
        finally
        {
            await old.DisposeAsync();
        }

        // The message is still pending for the owner of the storage.
        await using var reopened = await Darq.OpenAsync(Options());
        Assert.Equal(1, reopened.PendingOutCount);
    }

    private static async Task EnqueueAsync(Darq darq, string prefix, int first, int last)
    {
        for (int value = first; value <= last; value++)
        {
            Assert.False((await darq.EnqueueAsync(Producer, value, (prefix + value.ToString(CultureInfo.InvariantCulture)).Bytes())).IsDuplicate);
        }
    }

    private DarqOptions Options() => HostStorage.PageBlobs(azurite.ConnectionString, _container);

    /// <summary>Every destination is down: OUT messages stay pending and the delivery loop keeps retrying.</summary>
    private sealed class UnreachableDestinations : IDarqDestinations, IDarqDestination
    {
        public IDarqDestination? Resolve(string name) => this;

        public ValueTask DeliverAsync(DarqDelivery delivery, CancellationToken cancellationToken) =>
            ValueTask.FromException(new IOException($"Destination '{delivery.Destination}' is unreachable (test)."));
    }
}
