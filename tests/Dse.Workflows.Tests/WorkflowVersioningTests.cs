using System.Collections.Concurrent;

namespace Dse.Workflows.Tests;

public sealed class WorkflowVersioningTests
{
    private static readonly TimeSpan Timeout = TimeSpan.FromSeconds(30);

    [Fact]
    [Trait("Category", "Recovery")]
    public async Task GetVersion_InstancePastTheChange_KeepsTheOldPathWhileANewInstanceTakesTheNewOne()
    {
        var steps = new ConcurrentQueue<string>();
        var block = new TaskCompletionSource(TaskCreationOptions.RunContinuationsAsynchronously);
        var blocked = new TaskCompletionSource(TaskCreationOptions.RunContinuationsAsynchronously);
        Action<WorkflowRegistry> version1 = r => r.Register<int, string>("order", async (ctx, x) =>
        {
            await ctx.CallAsync("charge", (_, _) => Task.FromResult(1));
            await ctx.CallAsync("ship", async (_, ct) =>
            {
                blocked.TrySetResult();
                await block.Task.WaitAsync(ct);
                return 2;
            });
            return "v1";
        });
        Action<WorkflowRegistry> version2 = r => r.Register<int, string>("order", async (ctx, x) =>
        {
            await ctx.CallAsync("charge", (_, _) => Task.FromResult(1));
            int v = ctx.GetVersion("fraud-check", WorkflowContext.DefaultVersion, 1);
            if (v == 1)
            {
                await ctx.CallAsync("fraud-check", (_, _) =>
                {
                    steps.Enqueue($"{ctx.WorkflowId} fraud-check");
                    return Task.FromResult(true);
                });
            }

            await ctx.CallAsync("ship", (_, _) => Task.FromResult(2));
            return v == 1 ? "v2" : "v1-path";
        });

        await using var h = await WorkflowHarness.StartAsync(version1);
        await h.Engine.StartWorkflowAsync("order", "old", 0);
        await blocked.Task.WaitAsync(Timeout); // past the change point, shipping
        await h.SettleAsync();
        block.TrySetResult();

        await h.RestartAsync(version2);
        await h.Engine.StartWorkflowAsync("order", "new", 0);

        Assert.Equal("v1-path", await h.Engine.GetResultAsync<string>("old").AsTask().WaitAsync(Timeout));
        Assert.Equal("v2", await h.Engine.GetResultAsync<string>("new").AsTask().WaitAsync(Timeout));
        Assert.Equal(["new fraud-check"], steps.ToArray());

        // A replay of the new instance takes the recorded version again.
        await h.RestartAsync(version2);
        Assert.Equal("v2", await h.Engine.GetResultAsync<string>("new").AsTask().WaitAsync(Timeout));
    }

    [Fact]
    public async Task GetVersion_OldVersionNoLongerSupported_StopsTheOldInstance()
    {
        var block = new TaskCompletionSource(TaskCreationOptions.RunContinuationsAsynchronously);
        var blocked = new TaskCompletionSource(TaskCreationOptions.RunContinuationsAsynchronously);
        Action<WorkflowRegistry> version1 = r => r.Register<int, int>("w", async (ctx, x) =>
        {
            await ctx.CallAsync("a", (_, _) => Task.FromResult(1));
            return await ctx.CallAsync("b", async (_, ct) =>
            {
                blocked.TrySetResult();
                await block.Task.WaitAsync(ct);
                return 2;
            });
        });
        Action<WorkflowRegistry> version3 = r => r.Register<int, int>("w", async (ctx, x) =>
        {
            await ctx.CallAsync("a", (_, _) => Task.FromResult(1));
            ctx.GetVersion("rewrite", 1, 1);
            return await ctx.CallAsync("c", (_, _) => Task.FromResult(3));
        });

        await using var h = await WorkflowHarness.StartAsync(version1);
        await h.Engine.StartWorkflowAsync("w", "old", 0);
        await blocked.Task.WaitAsync(Timeout);
        await h.SettleAsync();
        block.TrySetResult();
        await h.RestartAsync(version3);

        var outcome = await h.Engine.WaitForOutcomeAsync("old").WaitAsync(Timeout);
        Assert.Equal(WorkflowStatus.Stopped, outcome.Status);
        Assert.Contains("'rewrite'", outcome.ErrorMessage, StringComparison.Ordinal);
    }
}
