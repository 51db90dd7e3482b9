using Dse.Coordinator.Tests.Infrastructure;

namespace Dse.Coordinator.Tests;

/// <summary>The <see cref="ICoordinatorLog"/> contract, run against every implementation through its harness.</summary>
public abstract class CoordinatorLogContractTests : IAsyncLifetime
{
    private readonly List<ICoordinatorLog> _logs = [];
    private LogHarness? _harness;

    protected LogHarness Harness => _harness ?? throw new InvalidOperationException("The harness is created in InitializeAsync.");

    public Task InitializeAsync()
    {
        _harness = CreateHarness();
        return Task.CompletedTask;
    }

    public async Task DisposeAsync()
    {
        foreach (var log in _logs)
        {
            await log.DisposeAsync();
        }

        if (_harness is not null)
        {
            await _harness.DisposeAsync();
        }
    }

    [Fact]
    public async Task OpenAsync_EmptyLog_ReturnsNoRecords()
    {
        var log = NewLog();

        var records = await log.OpenAsync();

        Assert.Empty(records);
        Assert.Equal(0, log.DurableAppends);
        Assert.False(string.IsNullOrWhiteSpace(log.Description));
    }

    [Fact]
    public async Task AppendAsync_ThenReopen_RecoversRecordsInOrder()
    {
        byte[] large = new byte[100_000];
        new Random(1234).NextBytes(large);
        byte[][] expected = [Frames.Bytes("membership: +a +b"), [], large, Frames.Bytes("rollback: fsn=42 world-line=3")];

        var first = NewLog();
        await first.OpenAsync();
        foreach (byte[] record in expected)
        {
            await first.AppendAsync(record);
        }

        await first.DisposeAsync();

        var second = NewLog();
        var recovered = await second.OpenAsync();

        Assert.Equal(expected.Length, recovered.Count);
        for (int i = 0; i < expected.Length; i++)
        {
            Assert.True(expected[i].AsSpan().SequenceEqual(recovered[i].Span), $"record {i} differs after recovery");
        }
    }

    [Fact]
    public async Task AppendAsync_AfterRecovery_ContinuesTheLog()
    {
        var first = NewLog();
        await first.OpenAsync();
        await first.AppendAsync(Frames.Bytes("one"));
        await first.DisposeAsync();

        var second = NewLog();
        await second.OpenAsync();
        await second.AppendAsync(Frames.Bytes("two"));
        await second.DisposeAsync();

        var third = NewLog();
        Assert.Equal(["one", "two"], Frames.Texts(await third.OpenAsync()));
    }

    [Fact]
    public async Task DurableAppends_OpenAndRecovery_CountOnlyThisInstancesAppends()
    {
        var first = NewLog();
        await first.OpenAsync();
        Assert.Equal(0, first.DurableAppends);
        await first.AppendAsync(Frames.Bytes("a"));
        await first.AppendAsync(Frames.Bytes("b"));
        await first.AppendAsync(Frames.Bytes("c"));
        Assert.Equal(3, first.DurableAppends);
        await first.DisposeAsync();

        var second = NewLog();
        var recovered = await second.OpenAsync();

        Assert.Equal(3, recovered.Count);
        Assert.Equal(0, second.DurableAppends);
    }

    [Fact]
    public async Task OpenAsync_SecondIncarnation_OnlyOneOfThemCanAppend()
    {
        var first = NewLog();
        await first.OpenAsync();
        await first.AppendAsync(Frames.Bytes("first-1"));
        var second = NewLog();

        if (Harness.Fencing == FencingMode.NewcomerTakesOver)
        {
            Assert.Equal(["first-1"], Frames.Texts(await second.OpenAsync()));

            var fenced = await Assert.ThrowsAsync<CoordinatorLogFencedException>(() => first.AppendAsync(Frames.Bytes("first-2")));
            Assert.False(string.IsNullOrWhiteSpace(fenced.Message));
            await Assert.ThrowsAsync<CoordinatorLogFencedException>(() => first.AppendAsync(Frames.Bytes("first-3")));
            await second.AppendAsync(Frames.Bytes("second-1"));
            Assert.Equal(1, first.DurableAppends);
            Assert.Equal(1, second.DurableAppends);
        }
        else
        {
            var refused = await Assert.ThrowsAsync<CoordinatorLogFencedException>(() => second.OpenAsync());
            Assert.Contains("held by another coordinator", refused.Message, StringComparison.Ordinal);
            await Assert.ThrowsAsync<InvalidOperationException>(() => second.AppendAsync(Frames.Bytes("second-1")));
            await first.AppendAsync(Frames.Bytes("first-2"));
            Assert.Equal(2, first.DurableAppends);
            Assert.Equal(0, second.DurableAppends);
        }

        await first.DisposeAsync();
        await second.DisposeAsync();
        var third = NewLog();
        string[] expected = Harness.Fencing == FencingMode.NewcomerTakesOver ? ["first-1", "second-1"] : ["first-1", "first-2"];
        Assert.Equal(expected, Frames.Texts(await third.OpenAsync()));
    }

    [Fact]
    public async Task AppendAsync_OversizedRecord_ThrowsArgumentExceptionAndAppendsNothing()
    {
        var log = NewLog();
        await log.OpenAsync();

        var error = await Assert.ThrowsAsync<ArgumentException>(() => log.AppendAsync(new byte[ICoordinatorLog.MaxRecordLength + 1]));

        Assert.Equal("record", error.ParamName);
        Assert.Contains(ICoordinatorLog.MaxRecordLength.ToString(System.Globalization.CultureInfo.InvariantCulture), error.Message, StringComparison.Ordinal);
        Assert.Equal(0, log.DurableAppends);
        await log.AppendAsync(Frames.Bytes("still usable"));
        await log.DisposeAsync();
        Assert.Equal(["still usable"], Frames.Texts(await NewLog().OpenAsync()));
    }

    [Fact]
    public async Task AppendAsync_RecordOfMaximumLength_RoundTrips()
    {
        byte[] record = new byte[ICoordinatorLog.MaxRecordLength];
        new Random(99).NextBytes(record);
        var log = NewLog();
        await log.OpenAsync();

        await log.AppendAsync(record);
        await log.DisposeAsync();

        var recovered = Assert.Single(await NewLog().OpenAsync());
        Assert.True(record.AsSpan().SequenceEqual(recovered.Span));
    }

    [Fact]
    public async Task AppendAsync_Concurrent_EveryRecordRecoveredOnce()
    {
        const int Count = 16;
        var log = NewLog();
        await log.OpenAsync();

        await Task.WhenAll(Enumerable.Range(0, Count).Select(i => Task.Run(() => log.AppendAsync(Frames.Bytes($"record-{i}")))));

        Assert.Equal(Count, log.DurableAppends);
        await log.DisposeAsync();
        var recovered = Frames.Texts(await NewLog().OpenAsync());
        Assert.Equal(Enumerable.Range(0, Count).Select(i => $"record-{i}").Order(StringComparer.Ordinal), recovered.Order(StringComparer.Ordinal));
    }

    [Fact]
    public async Task AppendAsync_BeforeOpen_ThrowsInvalidOperationException()
    {
        var log = NewLog();

        await Assert.ThrowsAsync<InvalidOperationException>(() => log.AppendAsync(Frames.Bytes("too early")));

        Assert.Equal(0, log.DurableAppends);
    }

    [Fact]
    public async Task OpenAsync_Twice_ThrowsInvalidOperationException()
    {
        var log = NewLog();
        await log.OpenAsync();

        await Assert.ThrowsAsync<InvalidOperationException>(() => log.OpenAsync());
    }

    [Fact]
    public async Task AppendAsync_AfterDispose_ThrowsObjectDisposedException()
    {
        var log = NewLog();
        await log.OpenAsync();
        await log.DisposeAsync();

        await Assert.ThrowsAsync<ObjectDisposedException>(() => log.AppendAsync(Frames.Bytes("late")));
    }

    protected abstract LogHarness CreateHarness();

    /// <summary>A new incarnation over the harness's storage, disposed after the test.</summary>
    protected ICoordinatorLog NewLog()
    {
        var log = Harness.CreateLog();
        _logs.Add(log);
        return log;
    }
}
