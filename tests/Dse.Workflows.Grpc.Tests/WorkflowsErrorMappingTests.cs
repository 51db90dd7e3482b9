using Dse.Testing;
using Dse.Workflows.Grpc.V1;
using Google.Protobuf;
using Grpc.Core;
using Microsoft.Extensions.Logging;

namespace Dse.Workflows.Grpc.Tests;

/// <summary>
/// Every refusal of the workflow service: the status, a detail naming what was wrong, nothing recorded, the exception
/// <see cref="WorkflowClient"/> raises for it, and nothing logged at Warning or above or with a stack trace. Calls carry
/// a DSE header, so that an error reply is released at once (the one test of a barrier on errors is the last).
/// </summary>
public sealed class WorkflowsErrorMappingTests : IAsyncLifetime
{
    private WorkflowsCluster _cluster = null!;

    public async Task InitializeAsync() => _cluster = await WorkflowsCluster.StartAsync();

    public async Task DisposeAsync() => await _cluster.DisposeAsync();

    [Fact]
    public async Task Start_UnknownType_InvalidArgumentNamingTheType()
    {
        var error = await RefusedAsync(() => _cluster.Plain.StartAsync(StartRequest("no-such-type", "w", "1"), WorkflowsCluster.Speculative()).ResponseAsync);

        Assert.Equal(StatusCode.InvalidArgument, error.StatusCode);
        Assert.Equal("/dse.workflows.v1.WorkflowService/Start: No workflow type 'no-such-type' is registered.", error.Status.Detail);
        Assert.Throws<WorkflowNotFoundException>(() => _cluster.Engine.Describe("w"));
        var typed = await Assert.ThrowsAsync<UnknownWorkflowTypeException>(() => _cluster.Client.StartAsync("no-such-type", "w", 1));
        Assert.Equal("no-such-type", typed.WorkflowType);
        await Assert.ThrowsAsync<UnknownWorkflowTypeException>(() => _cluster.Client.ExecuteAsync<int, int>("no-such-type", "w", 1));
    }

    [Theory]
    [InlineData("not json")]
    [InlineData("{\"item\":\"pen\",\"quantity\":\"many\"}")]
    [InlineData("")]
    public async Task Start_MalformedInputJson_InvalidArgumentAndNothingRecorded(string input)
    {
        var error = await RefusedAsync(() => _cluster.Plain.StartAsync(StartRequest(TestWorkflows.Double, "bad-input", input), WorkflowsCluster.Speculative()).ResponseAsync);

        Assert.Equal(StatusCode.InvalidArgument, error.StatusCode);
        Assert.StartsWith("/dse.workflows.v1.WorkflowService/Start: The input of workflow 'bad-input' does not deserialize as Order: ", error.Status.Detail, StringComparison.Ordinal);
        Assert.Throws<WorkflowNotFoundException>(() => _cluster.Engine.Describe("bad-input"));
        var execute = await RefusedAsync(() => _cluster.Plain.ExecuteAsync(StartRequest(TestWorkflows.Double, "bad-input", input), WorkflowsCluster.Speculative()).ResponseAsync);
        Assert.Equal(StatusCode.InvalidArgument, execute.StatusCode);
    }

    [Fact]
    public async Task Start_IdOfAnotherType_InvalidArgumentNamingBothTypes()
    {
        await _cluster.Client.StartAsync(TestWorkflows.WaitForGo, "typed", "x");

        var error = await RefusedAsync(() => _cluster.Plain.StartAsync(StartRequest(TestWorkflows.Greet, "typed", "\"x\""), WorkflowsCluster.Speculative()).ResponseAsync);

        Assert.Equal(StatusCode.InvalidArgument, error.StatusCode);
        Assert.Contains($"Workflow 'typed' exists already, of type '{TestWorkflows.WaitForGo}', not '{TestWorkflows.Greet}'", error.Status.Detail, StringComparison.Ordinal);
        await Assert.ThrowsAsync<ArgumentException>(() => _cluster.Client.StartAsync(TestWorkflows.Greet, "typed", "x"));
    }

    [Theory]
    [InlineData("not json")]
    [InlineData("{\"a\":1} {\"b\":2}")]
    [InlineData("")]
    public async Task Signal_MalformedPayload_InvalidArgumentAndNothingRecorded(string payload)
    {
        await _cluster.Client.StartAsync(TestWorkflows.WaitForGo, "signal-target", "x");
        int history = _cluster.Engine.Describe("signal-target").HistoryLength; // it waits for the signal: nothing else is recorded meanwhile

        var error = await RefusedAsync(() => _cluster.Plain.SignalAsync(
            new SignalRequest { Id = "signal-target", Name = "go", Payload = ByteString.CopyFromUtf8(payload) }, WorkflowsCluster.Speculative()).ResponseAsync);

        Assert.Equal(StatusCode.InvalidArgument, error.StatusCode);
        Assert.StartsWith("/dse.workflows.v1.WorkflowService/Signal: The payload is not", error.Status.Detail, StringComparison.Ordinal);
        var described = _cluster.Engine.Describe("signal-target");
        Assert.Equal((WorkflowStatus.Running, history), (described.Status, described.HistoryLength));
    }

    [Fact]
    public async Task Signal_EmptyName_InvalidArgumentNamingTheField()
    {
        await _cluster.Client.StartAsync(TestWorkflows.WaitForGo, "unnamed", "x");

        var error = await RefusedAsync(() => _cluster.Plain.SignalAsync(
            new SignalRequest { Id = "unnamed", Payload = ByteString.CopyFromUtf8("1") }, WorkflowsCluster.Speculative()).ResponseAsync);

        Assert.Equal(StatusCode.InvalidArgument, error.StatusCode);
        Assert.Contains("SignalRequest.name is empty", error.Status.Detail, StringComparison.Ordinal);
        await Assert.ThrowsAsync<ArgumentException>(() => _cluster.Client.SignalAsync("unnamed", "", 1));
    }

    [Theory]
    [InlineData("Start")]
    [InlineData("Execute")]
    [InlineData("GetResult")]
    [InlineData("Signal")]
    [InlineData("Cancel")]
    [InlineData("Describe")]
    public async Task AnyCall_EmptyId_InvalidArgument(string method)
    {
        var error = await RefusedAsync(() => CallAsync(method, id: " "));

        Assert.Equal(StatusCode.InvalidArgument, error.StatusCode);
        Assert.Equal($"/dse.workflows.v1.WorkflowService/{method}: the request's id is empty; name the workflow.", error.Status.Detail);
    }

    [Theory]
    [InlineData("GetResult")]
    [InlineData("Signal")]
    [InlineData("Cancel")]
    [InlineData("Describe")]
    public async Task AnyCall_UnknownId_NotFoundNamingTheId(string method)
    {
        var error = await RefusedAsync(() => CallAsync(method, id: "nobody"));

        Assert.Equal(StatusCode.NotFound, error.StatusCode);
        Assert.Equal($"/dse.workflows.v1.WorkflowService/{method}: No workflow 'nobody' exists.", error.Status.Detail);
    }

    [Fact]
    public async Task TypedClient_UnknownId_WorkflowNotFoundException()
    {
        var error = await Assert.ThrowsAsync<WorkflowNotFoundException>(() => _cluster.Client.DescribeAsync("nobody"));

        Assert.Equal("nobody", error.WorkflowId);
        Assert.IsType<RpcException>(error.InnerException);
        await Assert.ThrowsAsync<WorkflowNotFoundException>(() => _cluster.Client.GetResultAsync<int>("nobody"));
        await Assert.ThrowsAsync<WorkflowNotFoundException>(() => _cluster.Client.SignalAsync("nobody", "go", 1));
        await Assert.ThrowsAsync<WorkflowNotFoundException>(() => _cluster.Client.CancelAsync("nobody"));
    }

    [Theory]
    [InlineData("Signal")]
    [InlineData("Cancel")]
    public async Task SignalOrCancel_CompletedWorkflow_FailedPreconditionNamingItsStatus(string method)
    {
        Assert.Equal("hello ed", await _cluster.Client.ExecuteAsync<string, string>(TestWorkflows.Greet, "done", "ed"));
        int history = _cluster.Engine.Describe("done").HistoryLength;

        var error = await RefusedAsync(() => CallAsync(method, id: "done"));

        Assert.Equal(StatusCode.FailedPrecondition, error.StatusCode);
        Assert.Equal($"/dse.workflows.v1.WorkflowService/{method}: Workflow 'done' is Completed; nothing was recorded.", error.Status.Detail);
        Assert.Equal("Completed", error.Trailers.GetValue("dse-workflow-status"));
        Assert.Equal(history, _cluster.Engine.Describe("done").HistoryLength);
        var typed = await Assert.ThrowsAsync<WorkflowNotRunningException>(() => method == "Signal"
            ? _cluster.Client.SignalAsync("done", "go", 1)
            : _cluster.Client.CancelAsync("done"));
        Assert.Equal(WorkflowStatus.Completed, typed.Status);
    }

    [Fact]
    public async Task AnyCall_EngineDisposed_Unavailable()
    {
        await _cluster.Engine.DisposeAsync();

        var error = await RefusedAsync(() => CallAsync("Start", id: "late"));

        Assert.Equal(StatusCode.Unavailable, error.StatusCode);
        Assert.Equal("/dse.workflows.v1.WorkflowService/Start: The workflow engine is disposed.", error.Status.Detail);
        await Assert.ThrowsAsync<WorkflowEngineUnavailableException>(() => _cluster.Client.DescribeAsync("late"));
    }

    [Theory]
    [InlineData("Start", "StartRequest")]
    [InlineData("Execute", "StartRequest")]
    [InlineData("GetResult", "GetResultRequest")]
    [InlineData("Signal", "SignalRequest")]
    [InlineData("Cancel", "CancelRequest")]
    [InlineData("Describe", "DescribeRequest")]
    public async Task AnyCall_GarbageBytes_InvalidArgumentNamingTheMessage(string method, string requestType)
    {
        var error = await Assert.ThrowsAsync<RpcException>(() =>
            RawGrpcCall.UnaryAsync(_cluster.Server.Channel, "dse.workflows.v1.WorkflowService", method, RawGrpcCall.Garbage()));

        Assert.Equal(StatusCode.InvalidArgument, error.StatusCode);
        Assert.StartsWith($"/dse.workflows.v1.WorkflowService/{method}: the request is not a valid {requestType} message: ", error.Status.Detail, StringComparison.Ordinal);
        Assert.Contains(_cluster.Server.Logs.Entries, e => e.Level == LogLevel.Information && e.Message.Contains(error.Status.Detail, StringComparison.Ordinal));
        BadInputLogging.AssertNone(_cluster.Server.Logs);
    }

    [Fact]
    public async Task Start_UnknownTypeFromCallerWithoutDse_RefusedWithoutAHeader()
    {
        var error = await RefusedAsync(() => _cluster.Plain.StartAsync(StartRequest("no-such-type", "plain", "1"), WorkflowsCluster.PlainOptions()).ResponseAsync);

        Assert.Equal(StatusCode.InvalidArgument, error.StatusCode);
        Assert.DoesNotContain(error.Trailers, e => e.Key == Dse.Grpc.DseMetadata.HeaderKey);
    }

    /// <summary>Runs a refused call and checks what every refusal shares: no DSE trouble logged, nothing at Warning or above.</summary>
    private async Task<RpcException> RefusedAsync(Func<Task> call)
    {
        var error = await Assert.ThrowsAsync<RpcException>(call);
        BadInputLogging.AssertNone(_cluster.Server.Logs);
        return error;
    }

    private Task CallAsync(string method, string id)
    {
        var client = _cluster.Plain;
        var options = WorkflowsCluster.Speculative();
        return method switch
        {
            "Start" => client.StartAsync(StartRequest(TestWorkflows.Greet, id, "\"x\""), options).ResponseAsync,
            "Execute" => client.ExecuteAsync(StartRequest(TestWorkflows.Greet, id, "\"x\""), options).ResponseAsync,
            "GetResult" => client.GetResultAsync(new GetResultRequest { Id = id }, options).ResponseAsync,
            "Signal" => client.SignalAsync(new SignalRequest { Id = id, Name = "go", Payload = ByteString.CopyFromUtf8("1") }, options).ResponseAsync,
            "Cancel" => client.CancelAsync(new CancelRequest { Id = id }, options).ResponseAsync,
            "Describe" => client.DescribeAsync(new DescribeRequest { Id = id }, options).ResponseAsync,
            _ => throw new ArgumentOutOfRangeException(nameof(method), method, "Not a WorkflowService method."),
        };
    }

    private static StartRequest StartRequest(string type, string id, string json) => WorkflowsGrpcServiceTests.StartRequest(type, id, json);
}
