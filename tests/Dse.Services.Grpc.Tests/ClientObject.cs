using System.Buffers;
using Dse.Storage;

namespace Dse.Services.Grpc.Tests;

/// <summary>A caller's StateObject with no state of its own: what its requests depend on is its version.</summary>
public sealed class ClientObject(DseOptions options, SnapshotLog log) : SnapshotStateObject(options, log)
{
    /// <summary>Starts a local action and detaches it: an sthread to bind outgoing calls to with DseCall.Use.</summary>
    public async Task<Sthread> NewSthreadAsync()
    {
        await StartLocalActionAsync();
        return Detach();
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
