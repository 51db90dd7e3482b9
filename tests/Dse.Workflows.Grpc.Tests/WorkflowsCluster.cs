using Dse.Grpc;
using Dse.Services;
using Dse.Storage;
using Dse.Testing;
using Dse.Workflows.Grpc.V1;
using Grpc.Core;
using Microsoft.AspNetCore.Builder;
using Microsoft.Extensions.DependencyInjection;

namespace Dse.Workflows.Grpc.Tests;

/// <summary>
/// An in-process coordinator, the engine's log on a temporary folder, the engine (<see cref="TestWorkflows"/>), and
/// <see cref="WorkflowGrpcService"/> on a <see cref="LoopbackGrpcServer"/> mapped with <c>MapDseWorkflows</c>. Group
/// commit is periodic (5 ms) or, with <c>manualCommit</c>, left to the test (ten minutes): a reply that waits at its
/// barrier then waits until the test persists the log.
/// </summary>
public sealed class WorkflowsCluster : IAsyncDisposable
{
    /// <summary>The log's id.</summary>
    public const long LogId = 5;

    private static readonly TimeSpan s_manual = TimeSpan.FromMinutes(10);

    private readonly string _root = Path.Combine(Path.GetTempPath(), "dse-wfgrpc-" + Guid.NewGuid().ToString("N"));

    private WorkflowsCluster()
    {
    }

    /// <summary>The in-process coordinator; callers of the tests connect to it too.</summary>
    public ClusterCoordinator Coordinator { get; } = new();

    public SpeculativeLog Log { get; private set; } = null!;

    public WorkflowEngine Engine { get; private set; } = null!;

    public LoopbackGrpcServer Server { get; private set; } = null!;

    /// <summary>Tells when a handler first gave control back (see <see cref="HandlerProbe"/>).</summary>
    public HandlerProbe Probe { get; } = new();

    /// <summary>The generated client without DSE: its replies wait at a barrier.</summary>
    public WorkflowService.WorkflowServiceClient Plain => new(Server.Channel);

    /// <summary>The typed client without DSE.</summary>
    public WorkflowClient Client => new(Server.Channel);

    public static async Task<WorkflowsCluster> StartAsync(bool manualCommit = false)
    {
        var cluster = new WorkflowsCluster();
        try
        {
            await cluster.OpenAsync(manualCommit ? s_manual : TimeSpan.FromMilliseconds(5), manualCommit ? s_manual : TimeSpan.FromSeconds(1));
        }
        catch
        {
            await cluster.DisposeAsync();
            throw;
        }

        return cluster;
    }

    /// <summary>Call options of a speculative caller: a DSE header (with no dependencies) in the request metadata, and a deadline against hangs.</summary>
    public static CallOptions Speculative()
    {
        var headers = new Metadata();
        DseMetadata.SetHeader(headers, DseHeader.FromDependencies(0, []));
        return new CallOptions(headers, Deadline());
    }

    /// <summary>Call options without DSE, with a deadline against hangs.</summary>
    public static CallOptions PlainOptions() => new(deadline: Deadline());

    /// <summary>A deadline that only a hang reaches.</summary>
    public static DateTime Deadline() => DateTime.UtcNow.AddMinutes(1);

    /// <summary>Persists the log's current version and waits until it is committed.</summary>
    public async Task CommitAsync()
    {
        await Log.AdvanceVersionAsync();
        await Log.WaitForCommitAsync(Log.CurrentVersion - 1, Log.WorldLine);
    }

    /// <summary>
    /// Replaces the engine and its server with a new engine on the same log (as a deployment of other code would), with
    /// <paramref name="registry"/>'s types; the new engine loads the history the old one left.
    /// </summary>
    public async Task RestartEngineAsync(WorkflowRegistry registry)
    {
        await Server.DisposeAsync();
        await Engine.DisposeAsync();
        Engine = new WorkflowEngine(Log, registry);
        await Engine.StartAsync();
        await ServeAsync();
    }

    private async Task OpenAsync(TimeSpan groupCommit, TimeSpan heartbeat)
    {
        Log = new SpeculativeLog(new DseOptions { ObjectId = LogId, GroupCommitPeriod = groupCommit, HeartbeatPeriod = heartbeat }, new SpeculativeLogOptions
        {
            LogDevice = DseDevices.CreateLocalFile(Path.Combine(_root, "entries")),
            CommitDirectory = Path.Combine(_root, "commits"),
            OwnsStorage = true,
            PageSizeBits = 16,
            MemorySizeBits = 18,
            SegmentSizeBits = 20,
            MaxEntryBytes = 16 * 1024,
        });
        await Log.ConnectAsync(Coordinator);
        Engine = new WorkflowEngine(Log, TestWorkflows.Register(new WorkflowRegistry()));
        await Engine.StartAsync();
        await ServeAsync();
    }

    private async Task ServeAsync()
    {
        var engine = Engine;
        var probe = Probe;
        Server = await LoopbackGrpcServer.StartAsync(app => app.MapDseWorkflows(), services =>
        {
            BadInputLogging.Capture(services);
            services.AddSingleton(engine);
            services.AddSingleton(probe);
            services.AddGrpc(options => options.Interceptors.Add<HandlerProbe>());
        });
    }

    public async ValueTask DisposeAsync()
    {
        if (Server is not null)
        {
            await Server.DisposeAsync();
        }

        if (Engine is not null)
        {
            await Engine.DisposeAsync();
        }

        if (Log is not null)
        {
            await Log.DisposeAsync();
        }

        await Coordinator.DisposeAsync();
        try
        {
            Directory.Delete(_root, recursive: true);
        }
        catch (IOException)
        {
            // A device still closing; the OS cleans temp.
        }
    }
}
