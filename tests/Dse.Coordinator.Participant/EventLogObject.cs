using System.Buffers;
using System.Text;
using Dse.Storage;

namespace Dse.Coordinator.Participant;

/// <summary>
/// The participant's StateObject: its state is the list of events it applied, in order (its own events <c>p{id}-...</c>
/// and <c>recv:{event}</c> for each message it accepted). Each version is persisted whole as one snapshot.
/// </summary>
internal sealed class EventLogObject(DseOptions options, SnapshotLog log) : SnapshotStateObject(options, log)
{
    private const char Separator = '\n';

    // Appended to by concurrent actions, replaced by ReadSnapshot (no action runs then). Guarded by _lock.
    private readonly Lock _lock = new();
    private List<string> _events = [];

    /// <summary>Appends <paramref name="entry"/> to the state; call inside an action.</summary>
    public void Record(string entry)
    {
        lock (_lock)
        {
            _events.Add(entry);
        }
    }

    /// <summary>A copy of the current (possibly speculative) state.</summary>
    public string[] Events()
    {
        lock (_lock)
        {
            return [.. _events];
        }
    }

    /// <inheritdoc />
    protected override void WriteSnapshot(IBufferWriter<byte> writer)
    {
        lock (_lock)
        {
            for (int i = 0; i < _events.Count; i++)
            {
                if (i > 0)
                {
                    writer.Write([(byte)Separator]);
                }

                var bytes = writer.GetSpan(Encoding.UTF8.GetMaxByteCount(_events[i].Length));
                writer.Advance(Encoding.UTF8.GetBytes(_events[i], bytes));
            }
        }
    }

    /// <inheritdoc />
    protected override void ReadSnapshot(ReadOnlySpan<byte> snapshot)
    {
        var events = snapshot.IsEmpty ? [] : new List<string>(Encoding.UTF8.GetString(snapshot).Split(Separator));
        lock (_lock)
        {
            _events = events;
        }
    }
}
