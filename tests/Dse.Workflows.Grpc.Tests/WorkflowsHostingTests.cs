using Dse.Hosting;
using Dse.Services;
using Dse.Storage;
using Dse.Testing;
using Grpc.Core;
using Microsoft.AspNetCore.Builder;
using Microsoft.Extensions.DependencyInjection;
using Microsoft.Extensions.Diagnostics.HealthChecks;

namespace Dse.Workflows.Grpc.Tests;

/// <summary>The hosting extensions: AddDse(...).AddStateObject(SpeculativeLog).AddDseWorkflows(...) and MapDseWorkflows() on a real ASP.NET host.</summary>
public sealed class WorkflowsHostingTests : IDisposable
{
    private const long LogId = 7;

    private readonly string _root = Path.Combine(Path.GetTempPath(), "dse-wfhost-" + Guid.NewGuid().ToString("N"));

    public void Dispose()
    {
        try
        {
            Directory.Delete(_root, recursive: true);
        }
        catch (IOException)
        {
            // A device still closing; the OS cleans temp.
        }
    }

    [Fact]
    public async Task AddDseWorkflows_HostWithMapDseWorkflows_ServesAWorkflow()
    {
        await using var server = await StartHostAsync();
        var engine = server.Services.GetRequiredService<WorkflowEngine>();
        await engine.WhenReadyAsync();

        var client = new WorkflowClient(server.Channel);
        Assert.Equal("hello host", await client.ExecuteAsync<string, string>(TestWorkflows.Greet, "hosted", "host"));

        Assert.Same(server.Services.GetRequiredService<SpeculativeLog>(), engine.Log);
        var health = await HealthAsync(server);
        Assert.Equal(HealthStatus.Healthy, health.Status);
    }

    [Fact]
    public async Task AddDseWorkflows_RestartOnTheSameStorage_KeepsTheOutcome()
    {
        await using (var first = await StartHostAsync())
        {
            var client = new WorkflowClient(first.Channel);
            Assert.Equal("hello again", await client.ExecuteAsync<string, string>(TestWorkflows.Greet, "kept", "again"));
            await client.StartAsync(TestWorkflows.WaitForGo, "open", "x");
            await first.StopAsync();

            // Stopped: the engine was disposed with the host.
            Assert.Throws<WorkflowEngineUnavailableException>(() => first.Services.GetRequiredService<WorkflowEngine>().Describe("kept"));
        }

        await using var second = await StartHostAsync();
        var again = new WorkflowClient(second.Channel);
        Assert.Equal("hello again", await again.GetResultAsync<string>("kept"));
        Assert.True((await again.StartAsync(TestWorkflows.Greet, "kept", "again")).AlreadyStarted);

        // The open workflow resumed and still waits for its signal.
        await again.SignalAsync("open", "go", 3);
        Assert.Equal(6, await again.GetResultAsync<int>("open"));
    }

    [Fact]
    public async Task AddDseWorkflows_DseNotReady_EngineNotServingAndHealthDegraded()
    {
        // The in-process coordinator waits for a participant that never comes, so the log never connects.
        await using var server = await StartHostAsync(options => options.ExpectedParticipants = [LogId, 99]);

        var health = await HealthAsync(server);
        Assert.Equal(HealthStatus.Degraded, health.Status);
        Assert.False(server.Services.GetRequiredService<IDseReadiness>().IsReady);
        Assert.False(server.Services.GetRequiredService<WorkflowEngine>().WhenReadyAsync().IsCompleted);

        // A call waits for the engine until its deadline.
        var client = new V1.WorkflowService.WorkflowServiceClient(server.Channel);
        var error = await Assert.ThrowsAsync<RpcException>(() => client.DescribeAsync(new V1.DescribeRequest { Id = "any" }, deadline: DateTime.UtcNow.AddMilliseconds(200)).ResponseAsync);
        Assert.Equal(StatusCode.DeadlineExceeded, error.StatusCode);
    }

    [Fact]
    public async Task AddDseWorkflows_NoSpeculativeLog_HostStartFailsSayingSo()
    {
        var error = await Assert.ThrowsAsync<InvalidOperationException>(() => LoopbackGrpcServer.StartAsync(app => app.MapDseWorkflows(), services => services
            .AddDse(options => options.ObjectId = LogId)
            .AddDseWorkflows(registry => TestWorkflows.Register(registry))));

        Assert.Contains("none is registered", error.Message, StringComparison.Ordinal);
        Assert.Contains("AddStateObject", error.Message, StringComparison.Ordinal);
    }

    [Fact]
    public async Task MapDseWorkflows_InterceptorOnEveryService_ThrowsNamingTheFix()
    {
        var builder = WebApplication.CreateSlimBuilder();
        builder.Services
            .AddDse(options => options.ObjectId = LogId)
            .AddStateObject((_, options) => OpenLog(options))
            .AddGrpcInterceptors<SpeculativeLog>()
            .AddDseWorkflows(registry => TestWorkflows.Register(registry));
        await using var app = builder.Build();

        var error = Assert.Throws<InvalidOperationException>(() => app.MapDseWorkflows());

        Assert.Contains("AddGrpcInterceptors<TService, TStateObject>()", error.Message, StringComparison.Ordinal);
    }

    private Task<LoopbackGrpcServer> StartHostAsync(Action<DseHostingOptions>? configure = null) =>
        LoopbackGrpcServer.StartAsync(app => app.MapDseWorkflows(), services => services
            .AddDse(options =>
            {
                options.ObjectId = LogId;
                options.GroupCommitPeriod = TimeSpan.FromMilliseconds(5);
                configure?.Invoke(options);
            })
            .AddStateObject((_, options) => OpenLog(options))
            .AddDseWorkflows(registry => TestWorkflows.Register(registry)));

    private SpeculativeLog OpenLog(DseOptions options) => new(options, new SpeculativeLogOptions
    {
        LogDevice = DseDevices.CreateLocalFile(Path.Combine(_root, "entries")),
        CommitDirectory = Path.Combine(_root, "commits"),
        OwnsStorage = true,
        PageSizeBits = 16,
        MemorySizeBits = 18,
        SegmentSizeBits = 20,
        MaxEntryBytes = 16 * 1024,
    });

    private static async Task<HealthReportEntry> HealthAsync(LoopbackGrpcServer server)
    {
        var report = await server.Services.GetRequiredService<HealthCheckService>()
            .CheckHealthAsync(check => check.Name == DseWorkflowsBuilderExtensions.HealthCheckName);
        return report.Entries[DseWorkflowsBuilderExtensions.HealthCheckName];
    }
}
