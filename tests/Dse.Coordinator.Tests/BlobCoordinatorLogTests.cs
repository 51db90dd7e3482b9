using Azure;
using Azure.Core;
using Azure.Core.Pipeline;
using Azure.Storage.Blobs.Models;
using Azure.Storage.Blobs.Specialized;
using Dse.Coordinator.Tests.Infrastructure;
using Dse.Testing;
using Xunit.Abstractions;

namespace Dse.Coordinator.Tests;

/// <summary>The append blob log's lease fencing, races, crash takeover and conditional appends, against Azurite.</summary>
[Collection(AzuriteCollection.Name)]
[Trait("Category", "Azure")]
public sealed class BlobCoordinatorLogTests(AzuriteFixture azurite, ITestOutputHelper output) : IAsyncLifetime
{
    private const int LeaseBrokenEvent = 3102;
    private const int LeaseReleaseFailedEvent = 3105;
    private const int RetriedAppendConfirmedEvent = 3106;

    private readonly BlobLogHarness _harness = new(azurite);
    private readonly List<ICoordinatorLog> _logs = [];

    public Task InitializeAsync() => Task.CompletedTask;

    public async Task DisposeAsync()
    {
        foreach (var log in _logs)
        {
            await log.DisposeAsync();
        }

        await _harness.DisposeAsync();
    }

    [Fact]
    public async Task OpenAsync_TwoCoordinatorsRacing_ExactlyOneCanAppend()
    {
        const int Rounds = 20;
        int bothOpened = 0;
        for (int round = 0; round < Rounds; round++)
        {
            string blobName = $"race-{round}.log";
            var a = Track(_harness.CreateLog(new LogCapture(), blobName));
            var b = Track(_harness.CreateLog(new LogCapture(), blobName));

            // Both open at once, then both append at once, twice: only the incarnation holding the lease may succeed.
            bool[] opened = await Task.WhenAll(TryOpenAsync(a), TryOpenAsync(b));
            Assert.True(opened[0] || opened[1], $"round {round}: neither coordinator opened the log");
            bothOpened += opened[0] && opened[1] ? 1 : 0;
            bool[] first = await Task.WhenAll(TryAppendAsync(a, $"a-{round}-1"), TryAppendAsync(b, $"b-{round}-1"));
            bool[] second = await Task.WhenAll(TryAppendAsync(a, $"a-{round}-2"), TryAppendAsync(b, $"b-{round}-2"));

            Assert.True(first[0] ^ first[1], $"round {round}: first appends succeeded for a={first[0]}, b={first[1]}; exactly one must");
            Assert.Equal(first, second);
            string winner = first[0] ? "a" : "b";
            await a.DisposeAsync();
            await b.DisposeAsync();
            await using var reader = _harness.CreateLog(new LogCapture(), blobName);
            Assert.Equal([$"{winner}-{round}-1", $"{winner}-{round}-2"], Frames.Texts(await reader.OpenAsync()));
        }

        output.WriteLine($"{Rounds} rounds: both opens returned (the later one broke the earlier one's lease) in {bothOpened}; one open was fenced in {Rounds - bothOpened}.");
    }

    [Fact]
    public async Task OpenAsync_TwoCoordinatorsRacingToReplaceACrashedOne_ExactlyOneCanAppend()
    {
        const int Rounds = 20;
        int bothOpened = 0;
        for (int round = 0; round < Rounds; round++)
        {
            string blobName = $"crash-race-{round}.log";
            var crashed = Track(_harness.CreateLog(new LogCapture(), blobName));
            await crashed.OpenAsync();
            await crashed.AppendAsync(Frames.Bytes("crashed"));
            var a = Track(_harness.CreateLog(new LogCapture(), blobName));
            var b = Track(_harness.CreateLog(new LogCapture(), blobName));

            // Both find the crashed incarnation's lease and break it; the first to acquire afterwards wins.
            bool[] opened = await Task.WhenAll(TryOpenAsync(a), TryOpenAsync(b));
            Assert.True(opened[0] || opened[1], $"round {round}: neither coordinator opened the log");
            bothOpened += opened[0] && opened[1] ? 1 : 0;
            bool[] appended = await Task.WhenAll(TryAppendAsync(a, $"a-{round}"), TryAppendAsync(b, $"b-{round}"), TryAppendAsync(crashed, "zombie"));

            Assert.True(appended[0] ^ appended[1], $"round {round}: appends succeeded for a={appended[0]}, b={appended[1]}; exactly one must");
            Assert.False(appended[2], $"round {round}: the crashed incarnation appended after being replaced");
            string winner = appended[0] ? "a" : "b";
            await a.DisposeAsync();
            await b.DisposeAsync();
            await using var reader = _harness.CreateLog(new LogCapture(), blobName);
            Assert.Equal(["crashed", $"{winner}-{round}"], Frames.Texts(await reader.OpenAsync()));
        }

        output.WriteLine($"{Rounds} rounds: both opens returned in {bothOpened}; the loser was fenced while opening in {Rounds - bothOpened}.");
    }

    [Fact]
    public async Task OpenAsync_AfterCrashedHolder_BreaksItsLeaseRecoversAndFencesIt()
    {
        var crashed = Track(_harness.CreateLog(new LogCapture()));
        await crashed.OpenAsync();
        await crashed.AppendAsync(Frames.Bytes("before the crash"));

        // The crashed incarnation is never disposed: its infinite lease stays until someone breaks it.
        var logger = new LogCapture();
        var restarted = Track(_harness.CreateLog(logger));
        Assert.Equal(["before the crash"], Frames.Texts(await restarted.OpenAsync()));
        Assert.True(logger.Contains(LeaseBrokenEvent));
        await restarted.AppendAsync(Frames.Bytes("after the restart"));

        await Assert.ThrowsAsync<CoordinatorLogFencedException>(() => crashed.AppendAsync(Frames.Bytes("zombie")));
        await restarted.DisposeAsync();
        await using var reader = _harness.CreateLog(new LogCapture());
        Assert.Equal(["before the crash", "after the restart"], Frames.Texts(await reader.OpenAsync()));
    }

    [Fact]
    public async Task DisposeAsync_FencedInstanceThatDoesNotKnowIt_LeavesTheNewHoldersLease()
    {
        var oldLogger = new LogCapture();
        var old = _harness.CreateLog(oldLogger);
        await old.OpenAsync();
        var current = Track(_harness.CreateLog(new LogCapture()));
        await current.OpenAsync();

        await old.DisposeAsync();

        Assert.True(oldLogger.Contains(LeaseReleaseFailedEvent));
        await current.AppendAsync(Frames.Bytes("still the holder"));
        Assert.Equal(1, current.DurableAppends);
    }

    [Fact]
    public async Task DisposeAsync_Holder_ReleasesTheLease()
    {
        var log = _harness.CreateLog(new LogCapture());
        await log.OpenAsync();
        var blob = _harness.Container.GetAppendBlobClient(BlobLogHarness.BlobName);
        Assert.Equal(LeaseState.Leased, (await blob.GetPropertiesAsync()).Value.LeaseState);

        await log.DisposeAsync();

        var properties = (await blob.GetPropertiesAsync()).Value;
        Assert.Equal(LeaseState.Available, properties.LeaseState);
        Assert.Equal(BlobType.Append, properties.BlobType);
    }

    [Fact]
    public async Task AppendAsync_BlobChangedUnderTheWriter_ThrowsFencedWithoutInterleavingBytes()
    {
        var log = Track(_harness.CreateLog(new LogCapture()));
        await log.OpenAsync();
        await log.AppendAsync(Frames.Bytes("mine"));

        // A writer that somehow holds the same lease appends first; the position condition must stop the stale writer.
        var blob = _harness.Container.GetAppendBlobClient(BlobLogHarness.BlobName);
        using (var foreign = new MemoryStream(Frames.Encode("foreign")))
        {
            await blob.AppendBlockAsync(foreign, new AppendBlobAppendBlockOptions { Conditions = new AppendBlobRequestConditions { LeaseId = log.LeaseId } });
        }

        await Assert.ThrowsAsync<CoordinatorLogFencedException>(() => log.AppendAsync(Frames.Bytes("stale")));
        await Assert.ThrowsAsync<CoordinatorLogFencedException>(() => log.AppendAsync(Frames.Bytes("stale again")));
        await using var reader = _harness.CreateLog(new LogCapture());
        Assert.Equal(["mine", "foreign"], Frames.Texts(await reader.OpenAsync()));
    }

    [Fact]
    public async Task AppendAsync_ResponseLostAndRetried_CountsTheRecordOnce()
    {
        var logger = new LogCapture();
        var policy = new LoseFirstAppendResponsePolicy();
        var log = Track(_harness.CreateLogWithPolicy(policy, logger));
        await log.OpenAsync();

        await log.AppendAsync(Frames.Bytes("applied, response lost"));
        await log.AppendAsync(Frames.Bytes("next"));

        Assert.Equal(1, policy.Dropped);
        Assert.True(logger.Contains(RetriedAppendConfirmedEvent));
        Assert.Equal(2, log.DurableAppends);
        await log.DisposeAsync();
        await using var reader = _harness.CreateLog(new LogCapture());
        Assert.Equal(["applied, response lost", "next"], Frames.Texts(await reader.OpenAsync()));
    }

    [Fact]
    public async Task OpenAsync_TornRecordInTheBlob_ThrowsInvalidDataExceptionAndReleasesTheLease()
    {
        await _harness.Container.CreateIfNotExistsAsync();
        var blob = _harness.Container.GetAppendBlobClient(BlobLogHarness.BlobName);
        await blob.CreateAsync();
        using (var content = new MemoryStream(Frames.Concat(Frames.Encode("good"), Frames.Encode("cut short")[..20])))
        {
            await blob.AppendBlockAsync(content);
        }

        await using var log = _harness.CreateLog(new LogCapture());
        var error = await Assert.ThrowsAsync<InvalidDataException>(() => log.OpenAsync());

        Assert.Contains($"offset {Frames.Encode("good").Length}", error.Message, StringComparison.Ordinal);
        Assert.Equal(LeaseState.Available, (await blob.GetPropertiesAsync()).Value.LeaseState);
    }

    [Fact]
    public async Task OpenAsync_BlockBlobWithTheLogsName_ThrowsInvalidDataException()
    {
        await _harness.Container.CreateIfNotExistsAsync();
        await _harness.Container.GetBlobClient(BlobLogHarness.BlobName).UploadAsync(BinaryData.FromString("not an append blob"));

        await using var log = _harness.CreateLog(new LogCapture());
        var error = await Assert.ThrowsAsync<InvalidDataException>(() => log.OpenAsync());

        Assert.Contains("not an append blob", error.Message, StringComparison.Ordinal);
    }

    private static async Task<bool> TryOpenAsync(ICoordinatorLog log)
    {
        try
        {
            await log.OpenAsync();
            return true;
        }
        catch (CoordinatorLogFencedException)
        {
            return false;
        }
    }

    /// <summary>True when the append succeeded; false when the log refused it (fenced, or never opened).</summary>
    private static async Task<bool> TryAppendAsync(ICoordinatorLog log, string record)
    {
        try
        {
            await log.AppendAsync(Frames.Bytes(record));
            return true;
        }
        catch (Exception ex) when (ex is CoordinatorLogFencedException or InvalidOperationException)
        {
            return false;
        }
    }

    private T Track<T>(T log)
        where T : ICoordinatorLog
    {
        _logs.Add(log);
        return log;
    }

    /// <summary>Lets the first append block reach the service, then fails its response so that the client retries it.</summary>
    private sealed class LoseFirstAppendResponsePolicy : HttpPipelinePolicy
    {
        private int _dropped;

        public int Dropped => Volatile.Read(ref _dropped);

        public override void Process(HttpMessage message, ReadOnlyMemory<HttpPipelinePolicy> pipeline)
        {
            ProcessNext(message, pipeline);
            DropFirstAppendResponse(message);
        }

        public override async ValueTask ProcessAsync(HttpMessage message, ReadOnlyMemory<HttpPipelinePolicy> pipeline)
        {
            await ProcessNextAsync(message, pipeline);
            DropFirstAppendResponse(message);
        }

        private void DropFirstAppendResponse(HttpMessage message)
        {
            bool isAppend = message.Request.Method == RequestMethod.Put
                && message.Request.Uri.ToString().Contains("comp=appendblock", StringComparison.Ordinal);
            if (isAppend && message.Response.Status == 201 && Interlocked.CompareExchange(ref _dropped, 1, 0) == 0)
            {
                throw new IOException("Injected: the connection broke after the service applied the append.");
            }
        }
    }
}
