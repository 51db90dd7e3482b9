using System.Collections.Concurrent;

namespace Dse.Workflows.Tests;

public sealed class WorkflowReplayTests
{
    private static readonly TimeSpan Timeout = TimeSpan.FromSeconds(30);

    [Fact]
    public async Task GetResultAsync_TwoSteps_ReturnsResultBuiltFromBoth()
    {
        await using var h = await WorkflowHarness.StartAsync(r => r.Register<int, int>("add", async (ctx, x) =>
        {
            int a = await ctx.CallAsync("double", (_, _) => Task.FromResult(x * 2));
            return await ctx.CallAsync("plus-one", (_, _) => Task.FromResult(a + 1));
        }));

        var start = await h.Engine.StartWorkflowAsync("add", "w1", 20);

        Assert.False(start.AlreadyStarted);
        Assert.Equal(41, await h.Engine.GetResultAsync<int>("w1").AsTask().WaitAsync(Timeout));
        var description = h.Engine.Describe("w1");
        Assert.Equal(WorkflowStatus.Completed, description.Status);
        Assert.Equal(6, description.HistoryLength); // started, 2 x (scheduled, completed), completed
    }

    [Fact]
    public async Task GetResultAsync_ReturnsOnlyOnceTheOutcomeIsCommitted()
    {
        await using var h = await WorkflowHarness.StartAsync(r => r.Register<int, int>("id", (_, x) => Task.FromResult(x)));
        await h.Engine.StartWorkflowAsync("id", "w1", 7);
        await h.Engine.WaitForOutcomeAsync("w1").WaitAsync(Timeout);
        long end = h.Log.TailLsn; // the outcome's entry lies below

        Assert.Equal(7, await h.Engine.GetResultAsync<int>("w1").AsTask().WaitAsync(Timeout));

        // The result was released only once the entry holding the outcome was durable and its version committed.
        Assert.True(h.Log.DurableLsn >= end, $"durable up to {h.Log.DurableLsn}, outcome below {end}");
        Assert.True(h.Log.CommittedVersion >= 1);
    }

    [Fact]
    public async Task StartWorkflowAsync_SameIdTwice_ReturnsTheSameInstanceAndRunsItOnce()
    {
        int runs = 0;
        await using var h = await WorkflowHarness.StartAsync(r => r.Register<int, int>("count", async (ctx, x) =>
            await ctx.CallAsync("count", (_, _) => Task.FromResult(Interlocked.Increment(ref runs)))));

        var first = await h.Engine.StartWorkflowAsync("count", "same", 1);
        var second = await h.Engine.StartWorkflowAsync("count", "same", 2);

        Assert.False(first.AlreadyStarted);
        Assert.True(second.AlreadyStarted);
        Assert.Equal(first.Run, second.Run);
        Assert.Equal(1, await h.Engine.GetResultAsync<int>("same").AsTask().WaitAsync(Timeout));
        Assert.Equal(1, runs);
    }

    [Fact]
    [Trait("Category", "Recovery")]
    public async Task Restart_AfterCompletion_ReplaysNothingAndKeepsTheResult()
    {
        var calls = new ConcurrentBag<string>();
        Action<WorkflowRegistry> register = r => r.Register<string, string>("echo", async (ctx, s) =>
            await ctx.CallAsync("echo", (_, _) =>
            {
                calls.Add(s);
                return Task.FromResult(s + "!");
            }));
        await using var h = await WorkflowHarness.StartAsync(register);
        await h.Engine.StartWorkflowAsync("echo", "w", "hi");
        Assert.Equal("hi!", await h.Engine.GetResultAsync<string>("w").AsTask().WaitAsync(Timeout));

        await h.RestartAsync(register);

        Assert.Equal("hi!", await h.Engine.GetResultAsync<string>("w").AsTask().WaitAsync(Timeout));
        Assert.Single(calls);
    }

    [Fact]
    [Trait("Category", "Recovery")]
    public async Task Restart_MidStep_ReplaysRecordedStepsAndReissuesThePendingOneWithTheSameKey()
    {
        var keys = new ConcurrentQueue<string>();
        var firstRuns = 0;
        var block = new TaskCompletionSource(TaskCreationOptions.RunContinuationsAsynchronously);
        var blocked = new TaskCompletionSource(TaskCreationOptions.RunContinuationsAsynchronously);
        var observed = new ConcurrentQueue<(DateTimeOffset Now, Guid Guid, int Random)>();
        Action<WorkflowRegistry> Register(bool blockSecond) => r => r.Register<int, string>("two", async (ctx, x) =>
        {
            observed.Enqueue((ctx.UtcNow, ctx.NewGuid(), ctx.Random.Next()));
            int a = await ctx.CallAsync("first", (_, _) => Task.FromResult(Interlocked.Increment(ref firstRuns)));
            string b = await ctx.CallAsync("second", async (step, ct) =>
            {
                keys.Enqueue(step.IdempotencyKey);
                if (blockSecond)
                {
                    blocked.TrySetResult();
                    await block.Task.WaitAsync(ct);
                }

                return "b";
            });
            return $"{a}{b}";
        });

        await using var h = await WorkflowHarness.StartAsync(Register(blockSecond: true));
        await h.Engine.StartWorkflowAsync("two", "w", 0);
        await blocked.Task.WaitAsync(Timeout);
        await h.SettleAsync(); // the first step's outcome and the second's intent are durable

        await h.RestartAsync(Register(blockSecond: false));

        Assert.Equal("1b", await h.Engine.GetResultAsync<string>("w").AsTask().WaitAsync(Timeout));
        Assert.Equal(1, firstRuns); // replayed from the history, not run again
        Assert.Equal(2, keys.Count);
        Assert.Single(keys.Distinct());
        Assert.Equal("w/1/1", keys.First());

        // The clock, GUIDs and random numbers the code saw are the same on the replay.
        var seen = observed.ToArray();
        Assert.Equal(2, seen.Length);
        Assert.Equal(seen[0], seen[1]);
    }

    [Fact]
    public async Task Replay_CodeCallsAnotherStep_StopsThatWorkflowWithANonDeterminismErrorNamingTheStep()
    {
        var block = new TaskCompletionSource(TaskCreationOptions.RunContinuationsAsynchronously);
        var blocked = new TaskCompletionSource(TaskCreationOptions.RunContinuationsAsynchronously);
        Action<WorkflowRegistry> Register(string secondStep) => r =>
        {
            r.Register<int, int>("changing", async (ctx, x) =>
            {
                await ctx.CallAsync("reserve-hotel", (_, _) => Task.FromResult(1));
                await ctx.CallAsync(secondStep, async (_, ct) =>
                {
                    blocked.TrySetResult();
                    await block.Task.WaitAsync(ct);
                    return 2;
                });
                return 0;
            });
            r.Register<int, int>("other", async (ctx, x) => await ctx.CallAsync("plain", (_, _) => Task.FromResult(x)));
        };

        await using var h = await WorkflowHarness.StartAsync(Register("reserve-flight"));
        await h.Engine.StartWorkflowAsync("changing", "changing", 0);
        await blocked.Task.WaitAsync(Timeout);
        await h.SettleAsync();

        block.TrySetResult();
        await h.RestartAsync(Register("reserve-car"));
        await h.Engine.StartWorkflowAsync("other", "other", 5);

        var outcome = await h.Engine.WaitForOutcomeAsync("changing").WaitAsync(Timeout);
        Assert.Equal(WorkflowStatus.Stopped, outcome.Status);
        Assert.Equal(typeof(WorkflowNonDeterminismException).FullName, outcome.ErrorType);
        Assert.Contains("step 1 'reserve-car'", outcome.ErrorMessage, StringComparison.Ordinal);
        Assert.Contains("step 1 'reserve-flight'", outcome.ErrorMessage, StringComparison.Ordinal);
        var ex = await Assert.ThrowsAsync<WorkflowStoppedException>(() => h.Engine.GetResultAsync<int>("changing").AsTask());
        Assert.Contains("reserve-car", ex.Message, StringComparison.Ordinal);

        // The other workflow is not affected.
        Assert.Equal(5, await h.Engine.GetResultAsync<int>("other").AsTask().WaitAsync(Timeout));
    }

    [Theory]
    [InlineData(true)]
    [InlineData(false)]
    public async Task Step_NonSpeculativeMode_RunsOnlyOnceItsIntentIsDurable(bool speculative)
    {
        var durableAtStep = new TaskCompletionSource<bool>(TaskCreationOptions.RunContinuationsAsynchronously);
        SpeculativeLogProbe? probe = null;
        await using var h = await WorkflowHarness.StartAsync(
            r => r.Register<int, int>("one", async (ctx, x) => await ctx.CallAsync("s", (_, _) =>
            {
                durableAtStep.TrySetResult(probe!.AllDurable);
                return Task.FromResult(x);
            })),
            speculative,
            groupCommit: TimeSpan.FromMinutes(10));
        probe = new SpeculativeLogProbe(h.Log);

        // Started speculatively (StartWorkflowAsync would wait for the ten-minute group commit).
        await h.Log.StartLocalActionAsync();
        h.Engine.StartInAction("one", "w", System.Text.Encoding.UTF8.GetBytes("3"));
        var start = h.Log.EndActionAsync().AsTask();
        bool durable = await durableAtStep.Task.WaitAsync(Timeout);

        // Speculative: the step runs while its intent is in memory only. Not speculative: it was persisted first.
        Assert.Equal(!speculative, durable);
        await start.WaitAsync(Timeout);
        await h.Engine.WaitForOutcomeAsync("w").WaitAsync(Timeout);
        await h.SettleAsync();

        Assert.Equal(3, await h.Engine.GetResultAsync<int>("w").AsTask().WaitAsync(Timeout));
    }

    /// <summary>Reads whether everything appended to a log is durable.</summary>
    private sealed class SpeculativeLogProbe(Dse.Services.SpeculativeLog log)
    {
        public bool AllDurable => log.DurableLsn >= log.TailLsn;
    }
}
