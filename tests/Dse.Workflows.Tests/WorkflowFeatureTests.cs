using System.Collections.Concurrent;

namespace Dse.Workflows.Tests;

public sealed class WorkflowFeatureTests
{
    private static readonly TimeSpan Timeout = TimeSpan.FromSeconds(30);

    [Fact]
    public async Task Saga_ThirdReservationRefused_CompensatesTheOthersInReverseOrderAndFails()
    {
        var log = new ConcurrentQueue<string>();
        await using var h = await WorkflowHarness.StartAsync(r => r.Register<string[], string>("trip", async (ctx, items) =>
        {
            var saga = new Saga(ctx);
            try
            {
                foreach (string item in items)
                {
                    await ctx.CallAsync($"reserve:{item}", (_, _) =>
                    {
                        log.Enqueue($"reserve {item}");
                        return item == "car" ? throw new StepRefusedException($"{item} is full") : Task.FromResult(true);
                    });
                    saga.AddCompensation($"cancel:{item}", (_, _) =>
                    {
                        log.Enqueue($"cancel {item}");
                        return Task.CompletedTask;
                    });
                }

                return "confirmed";
            }
            catch (StepFailedException)
            {
                await saga.CompensateAsync();
                throw;
            }
        }));

        await h.Engine.StartWorkflowAsync("trip", "t1", new[] { "hotel", "flight", "car", "train" });

        var ex = await Assert.ThrowsAsync<WorkflowFailedException>(() => h.Engine.GetResultAsync<string>("t1").AsTask().WaitAsync(Timeout));
        Assert.Equal(typeof(StepFailedException).FullName, ex.ErrorType);
        Assert.Contains("car is full", ex.Message, StringComparison.Ordinal);
        Assert.Equal(["reserve hotel", "reserve flight", "reserve car", "cancel flight", "cancel hotel"], log.ToArray());
    }

    [Fact]
    public async Task Step_FailsTwiceThenSucceeds_RetriesAfterExponentialBackoffOnTheEngineClock()
    {
        var time = new SignallingTimeProvider();
        var attempts = new ConcurrentQueue<(int Attempt, DateTimeOffset At)>();
        var attempted = new SemaphoreSlim(0);
        var options = new StepOptions { MaxAttempts = 3, InitialBackoff = TimeSpan.FromMilliseconds(100), BackoffCoefficient = 2, AttemptTimeout = System.Threading.Timeout.InfiniteTimeSpan };
        await using var h = await WorkflowHarness.StartAsync(r => r.Register<int, int>("flaky", async (ctx, x) =>
            await ctx.CallAsync("flaky", (step, _) =>
            {
                attempts.Enqueue((step.Attempt, time.GetUtcNow()));
                attempted.Release();
                return step.Attempt < 3 ? throw new IOException("transient") : Task.FromResult(step.Attempt);
            }, options)), time: time);
        var start = time.GetUtcNow();

        await h.Engine.StartWorkflowAsync("flaky", "w", 0);
        Assert.True(await attempted.WaitAsync(Timeout));
        await time.WaitForTimerAsync();          // the backoff before attempt 2
        time.Advance(TimeSpan.FromMilliseconds(99));
        Assert.Single(attempts);                 // not yet
        time.Advance(TimeSpan.FromMilliseconds(1));
        Assert.True(await attempted.WaitAsync(Timeout));
        await time.WaitForTimerAsync();          // the backoff before attempt 3: twice as long
        time.Advance(TimeSpan.FromMilliseconds(199));
        Assert.Equal(2, attempts.Count);
        time.Advance(TimeSpan.FromMilliseconds(1));

        Assert.Equal(3, await h.Engine.GetResultAsync<int>("w").AsTask().WaitAsync(Timeout));
        Assert.Equal([(1, start), (2, start.AddMilliseconds(100)), (3, start.AddMilliseconds(300))], attempts.ToArray());
    }

    [Fact]
    public async Task Step_AttemptsUsedUp_WorkflowSeesStepFailedWithTheLastError()
    {
        int calls = 0;
        await using var h = await WorkflowHarness.StartAsync(r => r.Register<int, string>("broken", async (ctx, x) =>
        {
            try
            {
                await ctx.CallAsync("broken", (_, _) =>
                {
                    Interlocked.Increment(ref calls);
                    return Task.FromException<int>(new IOException("disk on fire"));
                }, new StepOptions { MaxAttempts = 2, InitialBackoff = TimeSpan.Zero });
                return "no";
            }
            catch (StepFailedException ex)
            {
                return $"{ex.StepName} {ex.ErrorType} {ex.Message}";
            }
        }));

        await h.Engine.StartWorkflowAsync("broken", "w", 0);

        string result = await h.Engine.GetResultAsync<string>("w").AsTask().WaitAsync(Timeout);
        Assert.StartsWith("broken System.IO.IOException", result, StringComparison.Ordinal);
        Assert.Contains("disk on fire", result, StringComparison.Ordinal);
        Assert.Equal(2, calls);
    }

    [Fact]
    public async Task Step_AttemptTimesOut_IsCancelledAndRetried()
    {
        var time = new SignallingTimeProvider();
        int calls = 0;
        await using var h = await WorkflowHarness.StartAsync(r => r.Register<int, int>("slow", async (ctx, x) =>
            await ctx.CallAsync("slow", async (step, ct) =>
            {
                Interlocked.Increment(ref calls);
                if (step.Attempt == 1)
                {
                    await Task.Delay(System.Threading.Timeout.Infinite, ct); // ends only by the attempt's timeout
                }

                return step.Attempt;
            }, new StepOptions { AttemptTimeout = TimeSpan.FromSeconds(5), InitialBackoff = TimeSpan.Zero })), time: time);

        await h.Engine.StartWorkflowAsync("slow", "w", 0);
        await time.WaitForTimerAsync(); // the first attempt's timeout
        time.Advance(TimeSpan.FromSeconds(5));

        Assert.Equal(2, await h.Engine.GetResultAsync<int>("w").AsTask().WaitAsync(Timeout));
        Assert.Equal(2, calls);
    }

    [Fact]
    [Trait("Category", "Recovery")]
    public async Task Timer_AcrossAHostRestart_FiresAtItsRecordedDeadline()
    {
        var time = new SignallingTimeProvider();
        Action<WorkflowRegistry> register = r => r.Register<int, DateTimeOffset>("sleepy", async (ctx, x) =>
        {
            await ctx.DelayAsync(TimeSpan.FromHours(1));
            return ctx.UtcNow;
        });
        await using var h = await WorkflowHarness.StartAsync(register, time: time);
        var start = time.GetUtcNow();
        await h.Engine.StartWorkflowAsync("sleepy", "w", 0);
        await time.WaitForTimerAsync();
        await h.SettleAsync(); // the timer's deadline is durable

        await h.RestartAsync(register);
        time.Advance(TimeSpan.FromMinutes(59));
        Assert.Equal(WorkflowStatus.Running, h.Engine.Describe("w").Status);
        time.Advance(TimeSpan.FromMinutes(1));

        var fired = await h.Engine.GetResultAsync<DateTimeOffset>("w").AsTask().WaitAsync(Timeout);
        Assert.True(fired >= start.AddHours(1), $"fired at {fired:O}");
    }

    [Fact]
    public async Task Signals_BeforeAndWhileWaiting_AreTakenInTheOrderTheyCame()
    {
        await using var h = await WorkflowHarness.StartAsync(r => r.Register<int, string>("approval", async (ctx, x) =>
        {
            string first = await ctx.WaitForSignalAsync<string>("vote");
            string second = await ctx.WaitForSignalAsync<string>("vote");
            return $"{first},{second}";
        }));

        await h.Engine.StartWorkflowAsync("approval", "w", 0);
        await h.Engine.SignalAsync("w", "vote", "yes");
        await h.Engine.SignalAsync("w", "vote", "no");

        Assert.Equal("yes,no", await h.Engine.GetResultAsync<string>("w").AsTask().WaitAsync(Timeout));
        await Assert.ThrowsAsync<WorkflowNotRunningException>(() => h.Engine.SignalAsync("w", "vote", "late").AsTask());
    }

    [Fact]
    public async Task Cancel_WhileWaitingOnATimer_CompensatesAndEndsCancelled()
    {
        var compensated = new TaskCompletionSource(TaskCreationOptions.RunContinuationsAsynchronously);
        await using var h = await WorkflowHarness.StartAsync(r => r.Register<int, int>("hold", async (ctx, x) =>
        {
            var saga = new Saga(ctx);
            await ctx.CallAsync("reserve", (_, _) => Task.FromResult(true));
            saga.AddCompensation("release", (_, _) =>
            {
                compensated.TrySetResult();
                return Task.CompletedTask;
            });
            try
            {
                await ctx.DelayAsync(TimeSpan.FromDays(1));
                return 1;
            }
            catch (OperationCanceledException)
            {
                await saga.CompensateAsync();
                throw;
            }
        }));

        await h.Engine.StartWorkflowAsync("hold", "w", 0);
        await WaitUntilAsync(() => h.Engine.Describe("w").HistoryLength >= 4); // started, reserve scheduled and completed, timer scheduled
        await h.Engine.CancelAsync("w");

        await Assert.ThrowsAsync<WorkflowCancelledException>(() => h.Engine.GetResultAsync<int>("w").AsTask().WaitAsync(Timeout));
        Assert.True(compensated.Task.IsCompleted);
        Assert.Equal(WorkflowStatus.Cancelled, h.Engine.Describe("w").Status);
    }

    [Fact]
    [Trait("Category", "Recovery")]
    public async Task ContinueAsNew_CountsDownAcrossRunsAndARestart_KeepingEachRunShort()
    {
        var block = new TaskCompletionSource(TaskCreationOptions.RunContinuationsAsynchronously);
        Action<WorkflowRegistry> register = r => r.Register<int[], int>("countdown", async (ctx, state) =>
        {
            int n = state[0];
            int sum = state[1];
            if (n == 0)
            {
                return sum;
            }

            int add = await ctx.CallAsync("add", async (_, ct) =>
            {
                if (n == 3)
                {
                    await block.Task.WaitAsync(ct);
                }

                return n;
            });
            throw ctx.ContinueAsNew(new[] { n - 1, sum + add });
        });
        await using var h = await WorkflowHarness.StartAsync(register);
        await h.Engine.StartWorkflowAsync("countdown", "w", new[] { 5, 0 });
        await WaitUntilAsync(() => h.Engine.Describe("w").Run == 3);
        await h.SettleAsync();

        block.TrySetResult();
        await h.RestartAsync(register);

        Assert.Equal(15, await h.Engine.GetResultAsync<int>("w").AsTask().WaitAsync(Timeout));
        var description = h.Engine.Describe("w");
        Assert.Equal(6, description.Run);
        Assert.Equal(2, description.HistoryLength); // the last run: started, completed
    }

    [Fact]
    public async Task ContinueAsNew_SignalNotYetTaken_MovesToTheNextRun()
    {
        await using var h = await WorkflowHarness.StartAsync(r => r.Register<int, string>("relay", async (ctx, run) =>
        {
            if (run == 0)
            {
                await ctx.WaitForSignalAsync<string>("go");
                throw ctx.ContinueAsNew(1);
            }

            return await ctx.WaitForSignalAsync<string>("go");
        }));

        await h.Engine.StartWorkflowAsync("relay", "w", 0);
        await h.Engine.SignalAsync("w", "go", "first");
        await h.Engine.SignalAsync("w", "go", "second");

        Assert.Equal("second", await h.Engine.GetResultAsync<string>("w").AsTask().WaitAsync(Timeout));
    }

    [Fact]
    public async Task CallChildAsync_ChildCompletesOrFails_ParentGetsItsResultOrError()
    {
        await using var h = await WorkflowHarness.StartAsync(r =>
        {
            r.Register<int, int>("double", (_, x) => x < 0 ? throw new InvalidOperationException("negative") : Task.FromResult(2 * x));
            r.Register<int, string>("parent", async (ctx, x) =>
            {
                int a = await ctx.CallChildAsync<int, int>("double", $"{ctx.WorkflowId}-child", x);
                try
                {
                    await ctx.CallChildAsync<int, int>("double", $"{ctx.WorkflowId}-bad", -1);
                    return "no";
                }
                catch (ChildWorkflowFailedException ex)
                {
                    return $"{a} {ex.ChildId} {ex.ErrorType}";
                }
            });
        });

        await h.Engine.StartWorkflowAsync("parent", "p", 21);

        Assert.Equal("42 p-bad System.InvalidOperationException", await h.Engine.GetResultAsync<string>("p").AsTask().WaitAsync(Timeout));
        Assert.Equal(42, await h.Engine.GetResultAsync<int>("p-child").AsTask().WaitAsync(Timeout));
    }

    internal static async Task WaitUntilAsync(Func<bool> condition)
    {
        var deadline = DateTime.UtcNow + Timeout;
        while (!condition())
        {
            if (DateTime.UtcNow > deadline)
            {
                throw new TimeoutException("The condition did not hold in time.");
            }

            await Task.Delay(10);
        }
    }
}
