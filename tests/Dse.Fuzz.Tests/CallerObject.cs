using System.Buffers;
using Dse.Storage;

namespace Dse.Fuzz.Tests;

/// <summary>A caller's StateObject with no state of its own: its actions' headers are what speculative calls carry.</summary>
internal sealed class CallerObject(DseOptions options, SnapshotLog log) : SnapshotStateObject(options, log)
{
    /// <summary>The encoded header of a new, empty action: a vertex this caller really has.</summary>
    public async Task<byte[]> HeaderAsync()
    {
        await StartLocalActionAsync();
        return EndAction().ToArray();
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
