using System.Buffers;
using System.Text.Json;
using Dse.Storage;

namespace Dse.Samples.HelloDse;

/// <summary>
/// The Visits service's state: how many times each name was recorded. A StateObject: it changes only inside actions
/// (each gRPC call under the DSE interceptor is one), and the runtime persists it as one snapshot per version in the
/// <see cref="SnapshotLog"/> it is given, which the caller opened and disposes.
/// </summary>
public sealed class VisitBook(DseOptions options, SnapshotLog log) : SnapshotStateObject(options, log)
{
    // Actions run concurrently, so the state guards itself; Persist and Restore never overlap an action.
    private readonly Lock _lock = new();
    private Dictionary<string, long> _visits = [];

    /// <summary>Records a visit of <paramref name="name"/> and returns how many there have been. Call it inside an action.</summary>
    public long Record(string name)
    {
        lock (_lock)
        {
            long visits = _visits.GetValueOrDefault(name) + 1;
            _visits[name] = visits;
            return visits;
        }
    }

    /// <summary>Writes the state; the runtime calls it with no action running.</summary>
    protected override void WriteSnapshot(IBufferWriter<byte> writer)
    {
        using var json = new Utf8JsonWriter(writer);
        lock (_lock)
        {
            JsonSerializer.Serialize(json, _visits);
        }
    }

    /// <summary>Replaces the state on a restart or a rollback; an empty snapshot is the initial state.</summary>
    protected override void ReadSnapshot(ReadOnlySpan<byte> snapshot)
    {
        var visits = snapshot.IsEmpty ? [] : JsonSerializer.Deserialize<Dictionary<string, long>>(snapshot) ?? [];
        lock (_lock)
        {
            _visits = visits;
        }
    }
}
