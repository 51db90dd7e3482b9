using System.Collections.Concurrent;

namespace Dse.Workflows.Tests;

public sealed class WorkflowRollbackTests
{
    private static readonly TimeSpan Timeout = TimeSpan.FromSeconds(30);

    [Fact]
    [Trait("Category", "Recovery")]
    public async Task ServiceRollsBack_StepReissuedWithTheSameKey_ActsOnceInTheSurvivingState()
    {
        var storage = new ConcurrentDictionary<long, (Dictionary<string, int> State, byte[] Metadata)>();
        CountingService service = null!;
        var keys = new ConcurrentQueue<string>();
        var go = new TaskCompletionSource(TaskCreationOptions.RunContinuationsAsynchronously);
        var called = new TaskCompletionSource(TaskCreationOptions.RunContinuationsAsynchronously);
        await using var h = await WorkflowHarness.StartAsync(r => r.Register<int, bool>("book", async (ctx, x) =>
            await ctx.CallAsync("book", async (step, ct) =>
            {
                await go.Task.WaitAsync(ct);
                keys.Enqueue(step.IdempotencyKey);
                bool acted = await service.CallAsync(step.IdempotencyKey, ct);
                called.TrySetResult();
                return acted;
            })));

        // The service never persists: everything it does dies with it.
        service = new CountingService(h.Options(2), storage, durable: false);
        await service.ConnectAsync(h.Coordinator);

        await h.Engine.StartWorkflowAsync("book", "trip", 0);
        await WorkflowFeatureTests.WaitUntilAsync(() => h.Engine.Describe("trip").HistoryLength >= 2); // the step's intent
        await h.SettleAsync(); // the intent is committed: only what follows depends on the service
        go.TrySetResult();
        await called.Task.WaitAsync(Timeout);
        await h.Engine.WaitForOutcomeAsync("trip").WaitAsync(Timeout); // speculatively done

        // The service crashes and comes back durable: the coordinator rolls the log back past the step's outcome, the
        // engine reloads and re-issues the step with the same key.
        await service.DisposeAsync();
        var restarted = new CountingService(h.Options(2), storage, durable: true);
        service = restarted;
        await restarted.ConnectAsync(h.Coordinator);

        Assert.True(await h.Engine.GetResultAsync<bool>("trip").AsTask().WaitAsync(Timeout));
        Assert.True(h.Engine.Generations >= 2, $"generations {h.Engine.Generations}");
        Assert.Equal(2, keys.Count);
        Assert.Single(keys.Distinct());
        Assert.Equal(1, restarted.Acted("trip/1/0"));
        await restarted.DisposeAsync();
    }
}
