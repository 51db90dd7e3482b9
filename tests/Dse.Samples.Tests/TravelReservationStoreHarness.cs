using Dse.Samples.TravelReservation;
using Dse.Services;

namespace Dse.Samples.Tests;

/// <summary>
/// Opens a <see cref="ReservationStore"/> over one directory and one in-process coordinator, as a restarted service
/// process would; deletes the directory on dispose. Versions advance only when a test says so, unless it asks for a
/// group-commit period.
/// </summary>
internal sealed class TravelReservationStoreHarness : IAsyncDisposable
{
    private static readonly TimeSpan s_manual = TimeSpan.FromMinutes(10);

    private readonly string _directory = Path.Combine(Path.GetTempPath(), "dse-travel-test-" + Guid.NewGuid().ToString("N"));
    private readonly List<SpeculativeKv> _open = [];

    public ClusterCoordinator Coordinator { get; } = new();

    /// <summary>Opens (or reopens) the store as service <c>hotel</c> (id 2), stocking it on its first start.</summary>
    public async Task<ReservationStore> OpenAsync(int items = 3, int capacity = 2, TimeSpan? groupCommit = null)
    {
        var period = groupCommit ?? s_manual;
        var kv = new SpeculativeKv(
            new DseOptions { ObjectId = 2, GroupCommitPeriod = period, HeartbeatPeriod = s_manual },
            new SpeculativeKvOptions
            {
                Directory = _directory,
                IndexBuckets = 1 << 10,
                PageSizeBits = 16,
                MemorySizeBits = 20,
                SegmentSizeBits = 22,
                MaxKeyBytes = 256,
                MaxValueBytes = 16 * 1024,
            });
        _open.Add(kv);
        await kv.ConnectAsync(Coordinator);
        var store = new ReservationStore(kv, "hotel");
        await store.InitializeAsync(items, capacity);
        return store;
    }

    /// <summary>Crashes the store (what it had not persisted is lost).</summary>
    public async Task CrashAsync(ReservationStore store)
    {
        _open.Remove(store.Kv);
        await store.Kv.DisposeAsync();
    }

    /// <summary>Persists the store's current version and waits until the coordinator has committed it.</summary>
    public static async Task SettleAsync(ReservationStore store)
    {
        await store.Kv.AdvanceVersionAsync();
        await store.Kv.WaitForCommitAsync(store.Kv.CurrentVersion - 1, store.Kv.WorldLine);
    }

    /// <summary>Runs <paramref name="operation"/> inside a local action of the store, as a handler under the DSE interceptor would.</summary>
    public static async Task<T> InActionAsync<T>(ReservationStore store, Func<ReservationStore, ValueTask<T>> operation)
    {
        await store.Kv.StartLocalActionAsync();
        try
        {
            return await operation(store);
        }
        finally
        {
            store.Kv.EndAction();
        }
    }

    public static Task<ReserveResult> ReserveAsync(ReservationStore store, string item, string trip) =>
        InActionAsync(store, s => s.ReserveAsync(item, trip));

    public static Task<bool> CancelAsync(ReservationStore store, string item, string trip) =>
        InActionAsync(store, s => s.CancelAsync(item, trip));

    public static Task<IReadOnlyList<ItemHolding>> InspectAsync(ReservationStore store) =>
        InActionAsync(store, s => s.InspectAsync());

    public async ValueTask DisposeAsync()
    {
        foreach (var kv in _open)
        {
            await kv.DisposeAsync();
        }

        try
        {
            Directory.Delete(_directory, recursive: true);
        }
        catch (IOException)
        {
            // A device still closing; the OS cleans temp.
        }
    }
}
