using System.Buffers;
using System.Text;
using Dse.Storage;

namespace Dse.Samples.Counter;

/// <summary>The logging service of the running example: keeps a line for every request and its result.</summary>
public sealed class LoggingService(DseOptions options, SnapshotLog log) : SnapshotStateObject(options, log)
{
    private readonly Lock _lock = new();
    private List<string> _entries = [];

    /// <summary>The entries so far (possibly speculative).</summary>
    public IReadOnlyList<string> Entries
    {
        get
        {
            lock (_lock)
            {
                return [.. _entries];
            }
        }
    }

    /// <summary>Appends an entry on behalf of a message carrying <paramref name="request"/>; returns the reply header.</summary>
    /// <exception cref="DseRolledBackException">The request came from rolled-back state and was discarded.</exception>
    public async Task<DseHeader> AppendAsync(DseHeader request, string entry, CancellationToken cancellationToken = default)
    {
        if (!await StartActionAsync(request, cancellationToken))
        {
            throw new DseRolledBackException("The log request came from state that was, or is being, rolled back; it was discarded.");
        }

        lock (_lock)
        {
            _entries.Add(entry);
        }

        return await EndActionAsync(cancellationToken);
    }

    /// <inheritdoc />
    protected override void WriteSnapshot(IBufferWriter<byte> writer)
    {
        // One line per entry; entries never contain a newline.
        Encoding.UTF8.GetBytes(string.Join('\n', _entries), writer);
    }

    /// <inheritdoc />
    protected override void ReadSnapshot(ReadOnlySpan<byte> snapshot)
    {
        var text = Encoding.UTF8.GetString(snapshot);
        lock (_lock)
        {
            _entries = text.Length == 0 ? [] : [.. text.Split('\n')];
        }
    }
}
