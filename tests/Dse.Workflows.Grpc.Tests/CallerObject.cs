using System.Buffers;
using Dse.Storage;

namespace Dse.Workflows.Grpc.Tests;

/// <summary>
/// A speculative caller's StateObject with no state of its own, on in-memory storage that outlives an instance, so the
/// test can crash it before it persisted: what its calls carried is then lost, and the coordinator rolls back every
/// participant that depends on it.
/// </summary>
public sealed class CallerObject(DseOptions options, SnapshotLog log, InMemoryStorage storage) : SnapshotStateObject(options, log)
{
    private static readonly TimeSpan s_manual = TimeSpan.FromMinutes(10);

    /// <summary>Opens the caller with <paramref name="id"/> on <paramref name="storage"/> and connects it; it persists only when told.</summary>
    public static async Task<CallerObject> OpenAsync(long id, InMemoryStorage storage, IDseCoordinator coordinator)
    {
        var log = await SnapshotLog.OpenAsync(DseDevices.CreateInMemory(storage), new SnapshotLogOptions { OwnsDevice = true });
        var caller = new CallerObject(new DseOptions { ObjectId = id, GroupCommitPeriod = s_manual, HeartbeatPeriod = s_manual }, log, storage);
        await caller.ConnectAsync(coordinator);
        return caller;
    }

    /// <summary>Starts a local action and detaches it: an sthread to bind outgoing calls to with DseCall.Use.</summary>
    public async Task<Sthread> NewSthreadAsync()
    {
        await StartLocalActionAsync();
        return Detach();
    }

    /// <summary>Crashes this instance (nothing it did since its last persist survives) and opens the caller again.</summary>
    public async Task<CallerObject> CrashAndRestartAsync(IDseCoordinator coordinator)
    {
        await DisposeAsync();
        return await OpenAsync(Id, storage, coordinator);
    }

    protected override void WriteSnapshot(IBufferWriter<byte> writer)
    {
    }

    protected override void ReadSnapshot(ReadOnlySpan<byte> snapshot)
    {
    }

    protected override async ValueTask DisposeAsyncCore()
    {
        await base.DisposeAsyncCore();
        await Log.DisposeAsync();
    }
}
