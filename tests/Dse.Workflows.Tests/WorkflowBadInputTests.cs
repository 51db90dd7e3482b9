using System.Text;

namespace Dse.Workflows.Tests;

public sealed class WorkflowBadInputTests
{
    private static readonly TimeSpan Timeout = TimeSpan.FromSeconds(30);

    private static void Register(WorkflowRegistry r)
    {
        r.Register<int, int>("wait", async (ctx, x) => await ctx.WaitForSignalAsync<int>("n") + x);
        r.Register<int, int>("id", (_, x) => Task.FromResult(x));
    }

    [Fact]
    public async Task Start_UnknownType_IsRefusedAndRecordsNothing()
    {
        await using var h = await WorkflowHarness.StartAsync(Register);
        long tail = h.Log.TailLsn;

        var ex = await Assert.ThrowsAsync<UnknownWorkflowTypeException>(() => h.Engine.StartWorkflowAsync("nope", "w", 1).AsTask());

        Assert.Equal("nope", ex.WorkflowType);
        Assert.Equal(tail, h.Log.TailLsn);
        Assert.Throws<WorkflowNotFoundException>(() => h.Engine.Describe("w"));
    }

    [Fact]
    public async Task Start_InputThatDoesNotDeserialize_IsRefusedAndRecordsNothing()
    {
        await using var h = await WorkflowHarness.StartAsync(Register);
        long tail = h.Log.TailLsn;

        await h.Log.StartLocalActionAsync();
        var ex = Assert.Throws<ArgumentException>(() => h.Engine.StartInAction("id", "w", Encoding.UTF8.GetBytes("\"not a number\"")));
        h.Log.EndAction();

        Assert.Contains("Int32", ex.Message, StringComparison.Ordinal);
        Assert.Equal(tail, h.Log.TailLsn);
    }

    [Fact]
    public async Task UnknownId_EveryCallSaysNotFound()
    {
        await using var h = await WorkflowHarness.StartAsync(Register);

        Assert.Throws<WorkflowNotFoundException>(() => h.Engine.Describe("ghost"));
        await Assert.ThrowsAsync<WorkflowNotFoundException>(() => h.Engine.SignalAsync("ghost", "n", 1).AsTask());
        await Assert.ThrowsAsync<WorkflowNotFoundException>(() => h.Engine.CancelAsync("ghost").AsTask());
        await Assert.ThrowsAsync<WorkflowNotFoundException>(() => h.Engine.GetResultAsync<int>("ghost").AsTask());
    }

    [Theory]
    [InlineData("{not json")]
    [InlineData("")]
    [InlineData("1 2")]
    public async Task Signal_MalformedPayload_IsRefusedAndTheWorkflowGoesOn(string payload)
    {
        await using var h = await WorkflowHarness.StartAsync(Register);
        await h.Engine.StartWorkflowAsync("wait", "w", 1);

        await h.Log.StartLocalActionAsync();
        Assert.Throws<ArgumentException>(() => h.Engine.SignalInAction("w", "n", Encoding.UTF8.GetBytes(payload)));
        h.Log.EndAction();
        await h.Engine.SignalAsync("w", "n", 41);

        Assert.Equal(42, await h.Engine.GetResultAsync<int>("w").AsTask().WaitAsync(Timeout));
    }

    [Fact]
    public async Task Signal_PayloadOfTheWrongType_FailsThatWorkflowOnly()
    {
        await using var h = await WorkflowHarness.StartAsync(Register);
        await h.Engine.StartWorkflowAsync("wait", "w", 1);
        await h.Engine.StartWorkflowAsync("id", "other", 5);

        await h.Engine.SignalAsync("w", "n", "not an int");

        var ex = await Assert.ThrowsAsync<WorkflowFailedException>(() => h.Engine.GetResultAsync<int>("w").AsTask().WaitAsync(Timeout));
        Assert.Equal(typeof(System.Text.Json.JsonException).FullName, ex.ErrorType);
        Assert.Equal(5, await h.Engine.GetResultAsync<int>("other").AsTask().WaitAsync(Timeout));
    }

    [Fact]
    [Trait("Category", "Recovery")]
    public async Task Restart_HistoryEntryFailsItsChecksum_StopsThatWorkflowOnlyWithAClearError()
    {
        await using var h = await WorkflowHarness.StartAsync(Register);
        await h.Engine.StartWorkflowAsync("wait", "victim", 1);
        await h.Engine.StartWorkflowAsync("wait", "bystander", 2);

        // An event of the victim whose body was damaged after it was checksummed, and an entry nobody can own.
        var forged = HistoryCodec.Encode(new HistoryEvent("victim", 1, 1, HistoryEventKind.SignalReceived, DateTimeOffset.UnixEpoch, 0, "n", null, Encoding.UTF8.GetBytes("7")));
        forged[^1] ^= 0x20;
        await h.Log.StartLocalActionAsync();
        h.Log.Append(forged);
        h.Log.Append(Encoding.UTF8.GetBytes("garbage that is no history event"));
        h.Log.EndAction();
        await h.SettleAsync();

        await h.RestartAsync(Register);

        var outcome = await h.Engine.WaitForOutcomeAsync("victim").WaitAsync(Timeout);
        Assert.Equal(WorkflowStatus.Stopped, outcome.Status);
        Assert.Equal(typeof(WorkflowHistoryCorruptException).FullName, outcome.ErrorType);
        Assert.Contains("history event 1", outcome.ErrorMessage, StringComparison.Ordinal);
        Assert.Contains("checksum", outcome.ErrorMessage, StringComparison.Ordinal);
        await Assert.ThrowsAsync<WorkflowNotRunningException>(() => h.Engine.SignalAsync("victim", "n", 1).AsTask());

        await h.Engine.SignalAsync("bystander", "n", 40);
        Assert.Equal(42, await h.Engine.GetResultAsync<int>("bystander").AsTask().WaitAsync(Timeout));
    }

    [Fact]
    public async Task Dispose_CallsAfterwards_SayTheEngineIsUnavailable()
    {
        await using var h = await WorkflowHarness.StartAsync(Register);
        await h.Engine.StartWorkflowAsync("wait", "w", 1);

        await h.Engine.DisposeAsync();

        await Assert.ThrowsAsync<WorkflowEngineUnavailableException>(() => h.Engine.WhenReadyAsync());
        await Assert.ThrowsAsync<WorkflowEngineUnavailableException>(() => h.Engine.WaitForOutcomeAsync("w"));
        await Assert.ThrowsAsync<WorkflowEngineUnavailableException>(() => h.Engine.GetResultAsync<int>("w").AsTask());
    }

    [Fact]
    public void Decode_DamagedBytes_SaysWhatIsWrongAndNeverThrows()
    {
        var e = new HistoryEvent("w", 1, 3, HistoryEventKind.StepCompleted, DateTimeOffset.UnixEpoch, 2, null, null, new byte[] { 1, 2, 3 });
        byte[] good = HistoryCodec.Encode(e);
        Assert.Equal(e with { Data = default }, HistoryCodec.Decode(good).Event! with { Data = default });

        var random = new Random(1234);
        for (int i = 0; i < 10_000; i++)
        {
            byte[] bad = (byte[])good.Clone();
            bad[random.Next(bad.Length)] ^= (byte)(1 << random.Next(8));
            // Every byte is under a checksum or is the format byte: any flipped bit is found.
            var record = HistoryCodec.Decode(bad);
            Assert.True(record.Problem is not null && record.Event is null, $"seed 1234, case {i}: a damaged entry decoded");
        }

        Assert.NotNull(HistoryCodec.Decode(good[..5]).Problem);
        Assert.NotNull(HistoryCodec.Decode([]).Problem);
    }
}
