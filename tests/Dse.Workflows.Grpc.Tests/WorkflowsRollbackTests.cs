using Dse.Grpc;
using Dse.Storage;
using Dse.Workflows.Grpc.V1;
using Grpc.Core;
using Grpc.Core.Interceptors;

namespace Dse.Workflows.Grpc.Tests;

/// <summary>
/// A reply held at its barrier whose outcome a rollback takes away: the call waits for the outcome again instead of
/// failing. A speculative caller starts the workflow, so the start and the outcome depend on the caller's state; the
/// caller crashes before persisting it, and the coordinator rolls the engine's log back to before the start.
/// </summary>
public sealed class WorkflowsRollbackTests : IAsyncLifetime
{
    private const long CallerId = 1;

    private readonly InMemoryStorage _callerStorage = new();
    private WorkflowsCluster _cluster = null!;
    private CallerObject _caller = null!;

    public async Task InitializeAsync()
    {
        _cluster = await WorkflowsCluster.StartAsync();
        _caller = await CallerObject.OpenAsync(CallerId, _callerStorage, _cluster.Coordinator);
    }

    public async Task DisposeAsync()
    {
        await _caller.DisposeAsync();
        await _cluster.DisposeAsync();
    }

    [Fact]
    public async Task Execute_OutcomeRolledBackAtTheBarrier_StartsAgainAndAnswersTheNewOutcome()
    {
        var first = await StartFromCallerAsync("again");
        long generations = _cluster.Engine.Generations;

        using var call = _cluster.Plain.ExecuteAsync(WorkflowsGrpcServiceTests.StartRequest(TestWorkflows.Greet, "again", "\"zed\""), WorkflowsCluster.PlainOptions());
        Assert.False(await _cluster.Probe.ReturnedAsync("/dse.workflows.v1.WorkflowService/Execute")); // held at the barrier
        _caller = await _caller.CrashAndRestartAsync(_cluster.Coordinator);

        var reply = await call.ResponseAsync;
        Assert.Equal(V1.WorkflowStatus.Completed, reply.Status);
        Assert.Equal("\"hello zed\"", reply.Result.ToStringUtf8());
        Assert.True(_cluster.Engine.Generations > generations, "the engine reloaded its history after the rollback");
        Assert.False(_cluster.Engine.IsOutcomeCurrent("again", first));
        Assert.Equal(WorkflowStatus.Completed, _cluster.Engine.Describe("again").Status);
    }

    [Fact]
    public async Task GetResult_StartRolledBackAtTheBarrier_NotFound()
    {
        await StartFromCallerAsync("gone");

        using var call = _cluster.Plain.GetResultAsync(new GetResultRequest { Id = "gone" }, WorkflowsCluster.PlainOptions());
        Assert.False(await _cluster.Probe.ReturnedAsync("/dse.workflows.v1.WorkflowService/GetResult"));
        _caller = await _caller.CrashAndRestartAsync(_cluster.Coordinator);

        var error = await Assert.ThrowsAsync<RpcException>(() => call.ResponseAsync);
        Assert.Equal(StatusCode.NotFound, error.StatusCode);
        Assert.Contains("'gone'", error.Status.Detail, StringComparison.Ordinal);
    }

    /// <summary>Starts a greeting as the speculative caller and returns its outcome, which depends on the caller's unpersisted state.</summary>
    private async Task<WorkflowOutcome> StartFromCallerAsync(string id)
    {
        var client = new WorkflowService.WorkflowServiceClient(_cluster.Server.Channel.Intercept(new DseClientInterceptor()));
        using (DseCall.Use(await _caller.NewSthreadAsync()))
        {
            var started = await client.StartAsync(WorkflowsGrpcServiceTests.StartRequest(TestWorkflows.Greet, id, "\"zed\""), deadline: WorkflowsCluster.Deadline());
            Assert.False(started.AlreadyStarted);
        }

        return await _cluster.Engine.WaitForOutcomeAsync(id);
    }
}
