using Dse.Storage;

namespace Dse.Grpc.Tests;

/// <summary>
/// An in-process coordinator and counters on in-memory storage that outlives an instance, so a node can restart.
/// Group commit is manual by default (a period of ten minutes): tests persist with AdvanceVersionAsync when they choose.
/// </summary>
public sealed class RelayCluster : IAsyncDisposable
{
    private readonly Dictionary<long, InMemoryStorage> _storage = [];
    private readonly List<StateObject> _objects = [];
    private readonly List<RelayServer> _servers = [];

    public ClusterCoordinator Coordinator { get; } = new();

    public static TimeSpan Manual { get; } = TimeSpan.FromMinutes(10);

    /// <summary>Opens (or reopens, after a restart) the counter with <paramref name="id"/> and connects it.</summary>
    public async Task<CounterObject> OpenAsync(long id, TimeSpan? period = null, bool speculative = true)
    {
        if (!_storage.TryGetValue(id, out var memory))
        {
            _storage[id] = memory = new InMemoryStorage();
        }

        var log = await SnapshotLog.OpenAsync(DseDevices.CreateInMemory(memory), new SnapshotLogOptions { OwnsDevice = true });
        var counter = new CounterObject(new DseOptions { ObjectId = id, GroupCommitPeriod = period ?? Manual, Speculative = speculative }, log);
        _objects.Add(counter);
        await counter.ConnectAsync(Coordinator);
        return counter;
    }

    /// <summary>Crashes a counter (its unpersisted state is lost) and opens it again, which makes the coordinator roll back.</summary>
    public async Task<CounterObject> RestartAsync(CounterObject counter)
    {
        await counter.DisposeAsync();
        return await OpenAsync(counter.Id, counter.Options.GroupCommitPeriod, counter.Options.Speculative);
    }

    /// <summary>Waits until <paramref name="stateObject"/> has applied the decisions up to <paramref name="worldLine"/>.</summary>
    public static async Task WaitForWorldLineAsync(StateObject stateObject, long worldLine)
    {
        while (stateObject.WorldLine < worldLine)
        {
            var epoch = stateObject.ClusterView.Epoch;
            await stateObject.RefreshAsync();
            if (stateObject.WorldLine < worldLine)
            {
                await stateObject.WaitForViewChangeAsync(epoch);
            }
        }
    }

    public async Task<RelayServer> ServeAsync(CounterObject counter, RelayServer? next = null, bool manual = false, DseHeaderAuthentication? authentication = null)
    {
        var node = new RelayNode { Counter = counter, Next = next?.DseClient() };
        var server = await RelayServer.StartAsync(node, manual, authentication);
        _servers.Add(server);
        return server;
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
    }
}
