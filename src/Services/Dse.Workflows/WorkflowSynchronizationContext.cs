using System.Collections.Concurrent;

namespace Dse.Workflows;

/// <summary>
/// The context workflow code runs on: continuations are queued and run one at a time by the run's loop, never on a pool
/// thread, so the order in which workflow code resumes depends on its history alone.
/// </summary>
internal sealed class WorkflowSynchronizationContext(Action wake) : SynchronizationContext
{
    private readonly ConcurrentQueue<(SendOrPostCallback Callback, object? State)> _queue = new();

    /// <inheritdoc />
    public override void Post(SendOrPostCallback d, object? state)
    {
        _queue.Enqueue((d, state));
        wake();
    }

    /// <inheritdoc />
    public override void Send(SendOrPostCallback d, object? state) =>
        throw new NotSupportedException("Workflow code cannot block on its own context.");

    /// <inheritdoc />
    public override SynchronizationContext CreateCopy() => this;

    /// <summary>Runs queued continuations, with this context current, until none is left.</summary>
    public void RunQueued()
    {
        var previous = Current;
        SetSynchronizationContext(this);
        try
        {
            while (_queue.TryDequeue(out var item))
            {
                item.Callback(item.State);
            }
        }
        finally
        {
            SetSynchronizationContext(previous);
        }
    }
}
