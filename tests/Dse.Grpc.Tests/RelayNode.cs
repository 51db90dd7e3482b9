using System.Collections.Concurrent;
using Dse.Grpc.Tests.Wire;
using Grpc.Core;

namespace Dse.Grpc.Tests;

/// <summary>One node of the relay: its StateObject (replaceable, to simulate a restart), its next hop, and test hooks.</summary>
public sealed class RelayNode
{
    private TaskCompletionSource _entered = NewSignal();
    private TaskCompletionSource _gate = NewSignal();

    public required CounterObject Counter { get; set; }

    public Relay.RelayClient? Next { get; set; }

    /// <summary>The DSE headers of the requests this node received (None for a non-speculative caller).</summary>
    public ConcurrentQueue<DseHeader> Seen { get; } = new();

    /// <summary>Completes if a handler ever ran the catch block of a failed forward.</summary>
    public TaskCompletionSource CatchRan { get; } = NewSignal();

    /// <summary>Completes when a held call reached its hold point.</summary>
    public Task Entered => _entered.Task;

    /// <summary>Releases held calls.</summary>
    public void Release() => _gate.TrySetResult();

    /// <summary>Makes the next held call wait again.</summary>
    public void ResetHold()
    {
        _entered = NewSignal();
        _gate = NewSignal();
    }

    internal void Record(ServerCallContext context)
    {
        DseMetadata.TryGetHeader(context.RequestHeaders, out var header);
        Seen.Enqueue(header);
    }

    internal async Task HoldAsync()
    {
        _entered.TrySetResult();
        await _gate.Task;
    }

    private static TaskCompletionSource NewSignal() => new(TaskCreationOptions.RunContinuationsAsynchronously);
}
