namespace Dse.Samples.TwoPhaseCommit;

/// <summary>
/// Counts the committer's commit calls that have not finished, including calls DSE abandoned after a rollback (their
/// handlers never resume, so the count is taken when the HTTP request ends, not in the handler).
/// </summary>
internal sealed class InFlightCommits
{
    private readonly Lock _lock = new();

    // Calls not yet finished; guarded by _lock. _idle is completed whenever _count is 0.
    private int _count;
    private TaskCompletionSource _idle = Completed();

    /// <summary>Counts a call until the returned scope is disposed (once).</summary>
    public IDisposable Enter()
    {
        lock (_lock)
        {
            if (_count++ == 0)
            {
                _idle = new TaskCompletionSource(TaskCreationOptions.RunContinuationsAsynchronously);
            }
        }

        return new Scope(this);
    }

    /// <summary>Completes once no call is in flight.</summary>
    public Task WhenIdleAsync(CancellationToken cancellationToken)
    {
        lock (_lock)
        {
            return _idle.Task.WaitAsync(cancellationToken);
        }
    }

    private void Exit()
    {
        TaskCompletionSource? idle = null;
        lock (_lock)
        {
            System.Diagnostics.Debug.Assert(_count > 0, "Every exit follows an enter.");
            if (--_count == 0)
            {
                idle = _idle;
            }
        }

        idle?.TrySetResult();
    }

    private static TaskCompletionSource Completed()
    {
        var done = new TaskCompletionSource(TaskCreationOptions.RunContinuationsAsynchronously);
        done.SetResult();
        return done;
    }

    private sealed class Scope(InFlightCommits owner) : IDisposable
    {
        private int _disposed;

        public void Dispose()
        {
            if (Interlocked.Exchange(ref _disposed, 1) == 0)
            {
                owner.Exit();
            }
        }
    }
}
