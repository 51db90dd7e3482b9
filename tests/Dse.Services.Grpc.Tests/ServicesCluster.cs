using Dse.Storage;
using FASTER.core;

namespace Dse.Services.Grpc.Tests;

/// <summary>
/// An in-process coordinator with clients, key-value stores and logs on storage that outlives an instance (so a
/// client can crash and restart). Group commit is manual (ten minutes): tests advance versions when they choose.
/// </summary>
public sealed class ServicesCluster : IAsyncDisposable
{
    private static readonly TimeSpan s_manual = TimeSpan.FromMinutes(10);

    private readonly Dictionary<long, InMemoryStorage> _clientStorage = [];
    private readonly List<StateObject> _objects = [];
    private readonly List<ServicesServer> _servers = [];
    private readonly string _root = Path.Combine(Path.GetTempPath(), "dse-svcgrpc-" + Guid.NewGuid().ToString("N"));

    public ClusterCoordinator Coordinator { get; } = new();

    public static DseOptions Options(long id) =>
        new() { ObjectId = id, GroupCommitPeriod = s_manual, HeartbeatPeriod = s_manual };

    /// <summary>Opens (or reopens after a restart) the client with <paramref name="id"/>.</summary>
    public async Task<ClientObject> OpenClientAsync(long id)
    {
        if (!_clientStorage.TryGetValue(id, out var memory))
        {
            _clientStorage[id] = memory = new InMemoryStorage();
        }

        var log = await SnapshotLog.OpenAsync(DseDevices.CreateInMemory(memory), new SnapshotLogOptions { OwnsDevice = true });
        var client = new ClientObject(Options(id), log);
        _objects.Add(client);
        await client.ConnectAsync(Coordinator);
        return client;
    }

    /// <summary>Crashes a client (its unpersisted state is lost) and opens it again: the coordinator rolls back.</summary>
    public async Task<ClientObject> RestartAsync(ClientObject client)
    {
        await client.DisposeAsync();
        return await OpenClientAsync(client.Id);
    }

    public async Task<SpeculativeKv> OpenKvAsync(long id)
    {
        var kv = new SpeculativeKv(Options(id), new SpeculativeKvOptions
        {
            Directory = Path.Combine(_root, "kv-" + id),
            IndexBuckets = 1 << 10,
            PageSizeBits = 16,
            MemorySizeBits = 20,
            SegmentSizeBits = 22,
            MaxKeyBytes = 64,
            MaxValueBytes = 4096,
        });
        _objects.Add(kv);
        await kv.ConnectAsync(Coordinator);
        return kv;
    }

    public async Task<SpeculativeLog> OpenLogAsync(long id)
    {
        string dir = Path.Combine(_root, "log-" + id);
        var log = new SpeculativeLog(Options(id), new SpeculativeLogOptions
        {
            LogDevice = DseDevices.CreateLocalFile(Path.Combine(dir, "entries")),
            CommitDirectory = Path.Combine(dir, "commits"),
            OwnsStorage = true,
            PageSizeBits = 16,
            MemorySizeBits = 18,
            SegmentSizeBits = 20,
            MaxEntryBytes = 1024,
        });
        _objects.Add(log);
        await log.ConnectAsync(Coordinator);
        return log;
    }

    public async Task<ServicesServer> ServeKvAsync(SpeculativeKv kv, bool manual)
    {
        var server = await ServicesServer.StartKvAsync(kv, manual);
        _servers.Add(server);
        return server;
    }

    public async Task<ServicesServer> ServeLogAsync(SpeculativeLog log)
    {
        var server = await ServicesServer.StartLogAsync(log);
        _servers.Add(server);
        return server;
    }

    /// <summary>Waits until <paramref name="so"/> has learned of a rollback decision (its world-line moved past 0).</summary>
    public static async Task WaitForRollbackAsync(StateObject so)
    {
        while (so.WorldLine == 0)
        {
            var epoch = so.ClusterView.Epoch;
            await so.RefreshAsync();
            if (so.WorldLine == 0)
            {
                await so.WaitForViewChangeAsync(epoch);
            }
        }
    }

    /// <summary>
    /// Waits for a reply that is released only once <paramref name="so"/>'s state is recoverable, advancing its version
    /// until it comes (an advance before the call's action ran would not cover it).
    /// </summary>
    public static async Task AwaitReleasedAsync(Task response, StateObject so)
    {
        while (!response.IsCompleted)
        {
            await so.AdvanceVersionAsync();
            await Task.WhenAny(response, Task.Delay(50));
        }
    }

    /// <summary>Persists the current version of <paramref name="so"/> and waits until it is committed.</summary>
    public static async Task CommitAsync(StateObject so)
    {
        await so.AdvanceVersionAsync();
        await so.WaitForCommitAsync(so.CurrentVersion - 1, so.WorldLine);
    }

    public async ValueTask DisposeAsync()
    {
        foreach (var server in _servers)
        {
            await server.DisposeAsync();
        }

        foreach (var o in _objects)
        {
            await o.DisposeAsync();
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
