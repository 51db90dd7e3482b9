using Dse.Storage;

namespace Dse.Hosting.Tests;

/// <summary>
/// In-memory storage for a <see cref="CounterStateObject"/> that outlives a host: each <see cref="OpenAsync"/> opens a
/// new log over the same bytes, as a restarted process would, behind a device that can be made to fail.
/// </summary>
internal sealed class CounterStorage : IAsyncDisposable
{
    private readonly InMemoryStorage _storage = new();
    private readonly List<SnapshotLog> _logs = [];

    /// <summary>The device under the log opened last.</summary>
    public FaultInjectingDevice? Device { get; private set; }

    public async Task<SnapshotLog> OpenAsync()
    {
        Device = DseDevices.CreateInMemory(_storage, new InMemoryDeviceOptions { CompleteSynchronously = true }).WithFaults();
        var log = await SnapshotLog.OpenAsync(Device, new SnapshotLogOptions { SegmentSize = 1 << 16, OwnsDevice = true });
        _logs.Add(log);
        return log;
    }

    public async ValueTask DisposeAsync()
    {
        foreach (var log in _logs)
        {
            await log.DisposeAsync();
        }
    }
}
