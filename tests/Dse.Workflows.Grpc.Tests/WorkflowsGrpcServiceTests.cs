using System.Text;
using System.Text.Json;
using Dse.Grpc;
using Dse.Workflows.Grpc.V1;
using Google.Protobuf;
using Grpc.Core;

namespace Dse.Workflows.Grpc.Tests;

/// <summary>The workflow service over real gRPC on loopback, with an in-process coordinator: the calls, and how replies are released.</summary>
public sealed class WorkflowsGrpcServiceTests
{
    [Fact]
    public async Task Execute_TinyWorkflow_ReturnsItsResult()
    {
        await using var cluster = await WorkflowsCluster.StartAsync();

        string result = await cluster.Client.ExecuteAsync<string, string>(TestWorkflows.Greet, "greet-1", "ada");

        Assert.Equal("hello ada", result);
        var described = await cluster.Client.DescribeAsync("greet-1");
        Assert.Equal(WorkflowStatus.Completed, described.Status);
        Assert.Equal(TestWorkflows.Greet, described.Type);
    }

    [Fact]
    public async Task Start_SameIdTwice_ReturnsTheSameInstance()
    {
        await using var cluster = await WorkflowsCluster.StartAsync();
        var request = StartRequest(TestWorkflows.WaitForGo, "twice", "\"x\"");

        var first = await cluster.Plain.StartAsync(request, WorkflowsCluster.PlainOptions());
        var second = await cluster.Plain.StartAsync(request, WorkflowsCluster.PlainOptions());

        Assert.False(first.AlreadyStarted);
        Assert.True(second.AlreadyStarted);
        Assert.Equal(("twice", 1), (first.Id, first.Run));
        Assert.Equal(("twice", 1), (second.Id, second.Run));
        Assert.Equal(1, cluster.Engine.Describe("twice").HistoryLength); // the second start recorded nothing

        // Execute joins the same instance rather than starting another.
        using var execute = cluster.Plain.ExecuteAsync(request, WorkflowsCluster.PlainOptions());
        await cluster.Client.SignalAsync("twice", "go", 21);
        var reply = await execute.ResponseAsync;
        Assert.Equal(WorkflowStatus.Completed, WorkflowWire.FromWire(reply.Status));
        Assert.Equal(42, JsonSerializer.Deserialize<int>(reply.Result.Span));
    }

    [Fact]
    public async Task Signal_WaitingWorkflow_CompletesWithThePayload()
    {
        await using var cluster = await WorkflowsCluster.StartAsync();
        var started = await cluster.Client.StartAsync(TestWorkflows.WaitForGo, "signalled", "x");
        Assert.False(started.AlreadyStarted);

        await cluster.Client.SignalAsync("signalled", "go", 5);

        Assert.Equal(10, await cluster.Client.GetResultAsync<int>("signalled"));
    }

    [Fact]
    public async Task Cancel_WaitingWorkflow_EndsCancelled()
    {
        await using var cluster = await WorkflowsCluster.StartAsync();
        await cluster.Client.StartAsync(TestWorkflows.WaitForGo, "cancelled", "x");

        await cluster.Client.CancelAsync("cancelled");

        var reply = await cluster.Plain.GetResultAsync(new GetResultRequest { Id = "cancelled" }, WorkflowsCluster.PlainOptions());
        Assert.Equal(V1.WorkflowStatus.Cancelled, reply.Status);
        await Assert.ThrowsAsync<WorkflowCancelledException>(() => cluster.Client.GetResultAsync<int>("cancelled"));
        var again = await Assert.ThrowsAsync<WorkflowNotRunningException>(() => cluster.Client.CancelAsync("cancelled"));
        Assert.Equal(WorkflowStatus.Cancelled, again.Status);
    }

    [Fact]
    public async Task Describe_RunningThenCompleted_ReportsWhereItStands()
    {
        await using var cluster = await WorkflowsCluster.StartAsync();
        await cluster.Client.StartAsync(TestWorkflows.WaitForGo, "described", "x");

        var running = await cluster.Plain.DescribeAsync(new DescribeRequest { Id = "described" }, WorkflowsCluster.PlainOptions());
        Assert.Equal(("described", TestWorkflows.WaitForGo, 1, V1.WorkflowStatus.Running), (running.Id, running.Type, running.Run, running.Status));
        Assert.True(running.HistoryLength >= 1);
        Assert.True(running.Result.IsEmpty);
        Assert.Equal(string.Empty, running.ErrorType);

        await cluster.Client.SignalAsync("described", "go", 1);
        Assert.Equal(2, await cluster.Client.GetResultAsync<int>("described"));

        var completed = await cluster.Client.DescribeAsync("described");
        Assert.Equal(WorkflowStatus.Completed, completed.Status);
        Assert.Equal(0, completed.PendingCommands);
        Assert.True(completed.HistoryLength > running.HistoryLength);
        Assert.Equal("2", Encoding.UTF8.GetString(completed.Outcome!.Result.Span));
    }

    [Fact]
    public async Task Execute_FailingWorkflow_AnswersFailedWithTheError()
    {
        await using var cluster = await WorkflowsCluster.StartAsync();

        var reply = await cluster.Plain.ExecuteAsync(StartRequest(TestWorkflows.Fail, "failing", "\"x\""), WorkflowsCluster.PlainOptions());

        Assert.Equal(V1.WorkflowStatus.Failed, reply.Status);
        Assert.Equal(typeof(InvalidOperationException).FullName, reply.ErrorType);
        Assert.Contains("boom", reply.ErrorMessage, StringComparison.Ordinal);
        var error = await Assert.ThrowsAsync<WorkflowFailedException>(() => cluster.Client.GetResultAsync<string>("failing"));
        Assert.Equal(typeof(InvalidOperationException).FullName, error.ErrorType);
    }

    [Fact]
    public async Task Execute_SpeculativeCaller_AnsweredBeforeCommitWithTheHeader()
    {
        await using var cluster = await WorkflowsCluster.StartAsync(manualCommit: true);

        // Nothing is committed while the test does not persist: only a reply that skips the barrier can arrive.
        using var call = cluster.Plain.ExecuteAsync(StartRequest(TestWorkflows.Greet, "fast", "\"bo\""), WorkflowsCluster.Speculative());
        var reply = await call.ResponseAsync;

        Assert.Equal("\"hello bo\"", reply.Result.ToStringUtf8());
        Assert.True(DseMetadata.TryGetHeader(call.GetTrailers(), out var header));
        var dependency = Assert.Single(Enumerable.Range(0, header.DependencyCount).Select(header.GetDependency), d => d.ObjectId == WorkflowsCluster.LogId);
        Assert.True(cluster.Log.CommittedVersion < dependency.Version, $"the reply depends on version {dependency.Version}, committed {cluster.Log.CommittedVersion}");
    }

    [Fact]
    public async Task GetResult_CallerWithoutDse_AnsweredOnlyOnceTheOutcomeIsCommitted()
    {
        await using var cluster = await WorkflowsCluster.StartAsync(manualCommit: true);
        await cluster.Plain.StartAsync(StartRequest(TestWorkflows.Greet, "held", "\"cy\""), WorkflowsCluster.Speculative());
        await cluster.Engine.WaitForOutcomeAsync("held");
        long recorded = cluster.Log.CurrentVersion; // the outcome was recorded at this version or before

        using var call = cluster.Plain.GetResultAsync(new GetResultRequest { Id = "held" }, WorkflowsCluster.PlainOptions());

        // The outcome is known, so the handler gives control back only at its barrier, which nothing lets through yet.
        Assert.False(await cluster.Probe.ReturnedAsync("/dse.workflows.v1.WorkflowService/GetResult"));
        Assert.False(call.ResponseAsync.IsCompleted);
        await cluster.CommitAsync();
        var reply = await call.ResponseAsync;
        Assert.Equal("\"hello cy\"", reply.Result.ToStringUtf8());
        Assert.True(cluster.Log.CommittedVersion >= recorded, $"committed {cluster.Log.CommittedVersion}, outcome recorded at or before {recorded}");
        Assert.DoesNotContain(call.GetTrailers(), e => e.Key == DseMetadata.HeaderKey);
    }

    [Fact]
    public async Task Execute_CallerWithoutDse_AnsweredOnlyOnceTheOutcomeIsCommitted()
    {
        await using var cluster = await WorkflowsCluster.StartAsync(manualCommit: true);
        await cluster.Plain.StartAsync(StartRequest(TestWorkflows.WaitForGo, "joined", "\"x\""), WorkflowsCluster.Speculative());
        await cluster.Plain.SignalAsync(new SignalRequest { Id = "joined", Name = "go", Payload = ByteString.CopyFromUtf8("4") }, WorkflowsCluster.Speculative());
        await cluster.Engine.WaitForOutcomeAsync("joined");
        long recorded = cluster.Log.CurrentVersion;

        using var call = cluster.Plain.ExecuteAsync(StartRequest(TestWorkflows.WaitForGo, "joined", "\"x\""), WorkflowsCluster.PlainOptions());

        Assert.False(await cluster.Probe.ReturnedAsync("/dse.workflows.v1.WorkflowService/Execute"));
        Assert.False(call.ResponseAsync.IsCompleted);
        await cluster.CommitAsync();
        var reply = await call.ResponseAsync;
        Assert.Equal("8", reply.Result.ToStringUtf8());
        Assert.True(cluster.Log.CommittedVersion >= recorded, $"committed {cluster.Log.CommittedVersion}, outcome recorded at or before {recorded}");
    }

    [Fact]
    public async Task Start_CallerWithoutDse_AnsweredOnlyOnceTheStartIsCommitted()
    {
        await using var cluster = await WorkflowsCluster.StartAsync(manualCommit: true);

        using var call = cluster.Plain.StartAsync(StartRequest(TestWorkflows.Announce, "durable", "\"durable\""), WorkflowsCluster.PlainOptions());
        await TestWorkflows.AnnouncedAsync("durable"); // its first step ran, so its start is recorded
        long recorded = cluster.Log.CurrentVersion;
        Assert.False(call.ResponseAsync.IsCompleted);
        await cluster.CommitAsync();
        Assert.False((await call.ResponseAsync).AlreadyStarted);
        Assert.True(cluster.Log.CommittedVersion >= recorded);
    }

    [Fact]
    public async Task GetResult_StoppedWorkflow_AnsweredAtOnceWithTheReason()
    {
        await using var cluster = await WorkflowsCluster.StartAsync(manualCommit: true);
        await cluster.Plain.StartAsync(StartRequest(TestWorkflows.WaitForGo, "halted", "\"x\""), WorkflowsCluster.Speculative());

        // Deployed code no longer has the type: the engine stops the workflow when it loads the history.
        await cluster.RestartEngineAsync(new WorkflowRegistry().Register<string, string>(TestWorkflows.Greet, (_, name) => Task.FromResult(name)));

        // Nothing commits while the test does not persist, so only a reply that skips the barrier arrives.
        var reply = await cluster.Plain.GetResultAsync(new GetResultRequest { Id = "halted" }, WorkflowsCluster.PlainOptions());
        Assert.Equal(V1.WorkflowStatus.Stopped, reply.Status);
        Assert.Equal(typeof(UnknownWorkflowTypeException).FullName, reply.ErrorType);
        Assert.Contains($"'{TestWorkflows.WaitForGo}'", reply.ErrorMessage, StringComparison.Ordinal);
        var described = await cluster.Plain.DescribeAsync(new DescribeRequest { Id = "halted" }, WorkflowsCluster.Speculative());
        Assert.Equal((V1.WorkflowStatus.Stopped, reply.ErrorMessage), (described.Status, described.ErrorMessage));
        var signal = await Assert.ThrowsAsync<RpcException>(() => cluster.Plain.SignalAsync(
            new SignalRequest { Id = "halted", Name = "go", Payload = ByteString.CopyFromUtf8("1") }, WorkflowsCluster.Speculative()).ResponseAsync);
        Assert.Equal((StatusCode.FailedPrecondition, "Stopped"), (signal.StatusCode, signal.Trailers.GetValue("dse-workflow-status")));
        var stopped = await Assert.ThrowsAsync<WorkflowStoppedException>(() => cluster.Client.GetResultAsync<int>("halted"));
        Assert.Contains(TestWorkflows.WaitForGo, stopped.Message, StringComparison.Ordinal);
    }

    internal static StartRequest StartRequest(string type, string id, string json) =>
        new() { Type = type, Id = id, Input = ByteString.CopyFromUtf8(json) };
}
