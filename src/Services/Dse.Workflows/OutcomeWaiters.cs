namespace Dse.Workflows;

/// <summary>
/// Who waits for which workflow's outcome. Not thread-safe: the engine calls it under its lock. A waiter that does not
/// count a stop (a parent waiting for its child, which may resume after a restart) stays until a real outcome.
/// </summary>
internal sealed class OutcomeWaiters
{
    private readonly Dictionary<string, List<(TaskCompletionSource<WorkflowOutcome> Waiter, bool IncludeStopped)>> _waiters = new(StringComparer.Ordinal);

    /// <summary>A task that completes with workflow <paramref name="id"/>'s next outcome.</summary>
    public Task<WorkflowOutcome> Add(string id, bool includeStopped, CancellationToken cancellationToken)
    {
        var waiter = new TaskCompletionSource<WorkflowOutcome>(TaskCreationOptions.RunContinuationsAsynchronously);
        if (!_waiters.TryGetValue(id, out var waiters))
        {
            _waiters[id] = waiters = [];
        }

        waiters.Add((waiter, includeStopped));
        return waiter.Task.WaitAsync(cancellationToken);
    }

    /// <summary>Hands <paramref name="outcome"/> to the waiters of <paramref name="id"/> that count it.</summary>
    public void Complete(string id, WorkflowOutcome outcome)
    {
        if (!_waiters.TryGetValue(id, out var waiters))
        {
            return;
        }

        waiters.RemoveAll(w =>
        {
            if (!w.IncludeStopped && outcome.Status == WorkflowStatus.Stopped)
            {
                return w.Waiter.Task.IsCompleted;
            }

            w.Waiter.TrySetResult(outcome);
            return true;
        });
        if (waiters.Count == 0)
        {
            _waiters.Remove(id);
        }
    }

    /// <summary>Fails the waiters of every id <paramref name="exists"/> says no longer exists (a rollback took its start away).</summary>
    public void FailMissing(Func<string, bool> exists)
    {
        foreach (string gone in _waiters.Keys.Where(id => !exists(id)).ToList())
        {
            Fail(gone, new WorkflowNotFoundException(gone, $"No workflow '{gone}' exists: a rollback took its start away."));
        }
    }

    /// <summary>Fails every waiter with <paramref name="error"/> (the engine is disposed).</summary>
    public void FailAll(Exception error)
    {
        foreach (string id in _waiters.Keys.ToList())
        {
            Fail(id, error);
        }
    }

    private void Fail(string id, Exception error)
    {
        foreach (var (waiter, _) in _waiters[id])
        {
            waiter.TrySetException(error);
        }

        _waiters.Remove(id);
    }
}
