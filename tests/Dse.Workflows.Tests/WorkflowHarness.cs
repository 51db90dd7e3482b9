using Dse.Services;
using Dse.Storage;

namespace Dse.Workflows.Tests;

/// <summary>
/// A workflow engine on a speculative log in a temporary folder, connected to an in-process coordinator. A restart
/// disposes the engine and the log without persisting anything outstanding (as a crash would) and opens both again on
/// the same storage.
/// </summary>
internal sealed class WorkflowHarness : IAsyncDisposable
{
    public const long LogId = 1;

    private readonly string _directory = Directory.CreateTempSubdirectory("dse-wf-").FullName;
    private readonly bool _speculative;
    private readonly TimeProvider _time;
    private readonly TimeSpan _groupCommit;

    private WorkflowHarness(bool speculative, TimeProvider time, TimeSpan groupCommit)
    {
        _speculative = speculative;
        _time = time;
        _groupCommit = groupCommit;
    }

    public ClusterCoordinator Coordinator { get; } = new();

    public SpeculativeLog Log { get; private set; } = null!;

    public WorkflowEngine Engine { get; private set; } = null!;

    /// <summary>Starts an engine with the workflows <paramref name="register"/> adds, on <paramref name="time"/> (the system clock by default).</summary>
    public static async Task<WorkflowHarness> StartAsync(Action<WorkflowRegistry> register, bool speculative = true, TimeProvider? time = null, TimeSpan? groupCommit = null)
    {
        var harness = new WorkflowHarness(speculative, time ?? TimeProvider.System, groupCommit ?? TimeSpan.FromMilliseconds(5));
        await harness.OpenAsync(register);
        return harness;
    }

    /// <summary>Crashes the engine and its log (nothing outstanding is persisted) and starts them again with <paramref name="register"/>.</summary>
    public async Task RestartAsync(Action<WorkflowRegistry> register)
    {
        await Engine.DisposeAsync();
        await Log.DisposeAsync();
        await OpenAsync(register);
    }

    /// <summary>Persists the log's current version and waits until the coordinator commits it.</summary>
    public async Task SettleAsync()
    {
        long version = Log.CurrentVersion;
        await Log.AdvanceVersionAsync();
        await Log.WaitForCommitAsync(version, Log.WorldLine);
    }

    /// <summary>The options of a participant of this harness's cluster; <paramref name="groupCommit"/> overrides the harness's period.</summary>
    public DseOptions Options(long id, TimeSpan? groupCommit = null) => new()
    {
        ObjectId = id,
        Speculative = _speculative,
        GroupCommitPeriod = groupCommit ?? _groupCommit,
    };

    public async ValueTask DisposeAsync()
    {
        await Engine.DisposeAsync();
        await Log.DisposeAsync();
        try
        {
            Directory.Delete(_directory, recursive: true);
        }
        catch (IOException)
        {
            // A device still closing; the OS cleans the temporary folder.
        }
    }

    private async Task OpenAsync(Action<WorkflowRegistry> register)
    {
        Log = new SpeculativeLog(Options(LogId), new SpeculativeLogOptions
        {
            LogDevice = DseDevices.CreateLocalFile(Path.Combine(_directory, "log", "history")),
            CommitDirectory = Path.Combine(_directory, "commits"),
            OwnsStorage = true,
            PageSizeBits = 16,
            MemorySizeBits = 18,
            SegmentSizeBits = 20,
            MaxEntryBytes = 32 * 1024,
        });
        await Log.ConnectAsync(Coordinator);
        var registry = new WorkflowRegistry();
        register(registry);
        Engine = new WorkflowEngine(Log, registry, new WorkflowEngineOptions { TimeProvider = _time });
        await Engine.StartAsync();
    }
}
