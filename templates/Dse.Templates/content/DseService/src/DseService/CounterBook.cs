using System.Buffers;
using System.Text.Json;
using Dse;
using Dse.Storage;

namespace DseService;

/// <summary>
/// The service's state: named counters. A StateObject: it changes only inside actions (each gRPC call under the DSE
/// interceptor is one), and the runtime persists it as one snapshot per version in the <see cref="SnapshotLog"/> it is
/// given, which the program opened and disposes after the host.
/// </summary>
public sealed class CounterBook(DseOptions options, SnapshotLog log) : SnapshotStateObject(options, log)
{
    // Actions run concurrently, so the state guards itself; WriteSnapshot and ReadSnapshot never overlap an action.
    private readonly Lock _lock = new();
    private Dictionary<string, long> _counters = [];

    /// <summary>Adds <paramref name="delta"/> to the counter <paramref name="name"/> and returns its new value. Call it inside an action.</summary>
    public long Add(string name, long delta)
    {
        lock (_lock)
        {
            long value = checked(_counters.GetValueOrDefault(name) + delta);
            _counters[name] = value;
            return value;
        }
    }

    /// <summary>The value of the counter <paramref name="name"/>, 0 if it was never added to.</summary>
    public long Get(string name)
    {
        lock (_lock)
        {
            return _counters.GetValueOrDefault(name);
        }
    }

    /// <summary>Writes the state; the runtime calls it when the group commit persists a version, with no action running.</summary>
    protected override void WriteSnapshot(IBufferWriter<byte> writer)
    {
        using var json = new Utf8JsonWriter(writer);
        lock (_lock)
        {
            JsonSerializer.Serialize(json, _counters);
        }
    }

    /// <summary>Replaces the state on a restart or a rollback; an empty snapshot is the initial state.</summary>
    protected override void ReadSnapshot(ReadOnlySpan<byte> snapshot)
    {
        var counters = snapshot.IsEmpty ? [] : JsonSerializer.Deserialize<Dictionary<string, long>>(snapshot) ?? [];
        lock (_lock)
        {
            _counters = counters;
        }
    }
}
