namespace Dse.Workflows;

/// <summary>
/// One life of the engine's in-memory state, from a load of the log to the next restore of the log. Everything that acts
/// on in-memory state (run loops, executors) belongs to one, stops when it ends, and appends only while the log has not
/// been restored since the load (<see cref="RestoreCount"/>): a restore may have dropped events the state was built on.
/// </summary>
internal sealed class Generation(long number, long restoreCount) : IDisposable
{
    private readonly CancellationTokenSource _end = new();
    private readonly Lock _lock = new();
    // The tracked tasks still running; each removes itself when it ends.
    private readonly HashSet<Task> _tasks = [];

    /// <summary>The generation's number (1 for the first load).</summary>
    public long Number { get; } = number;

    /// <summary>The log's <c>RestoreCount</c> when the load began.</summary>
    public long RestoreCount { get; } = restoreCount;

    /// <summary>Cancelled when the generation ends.</summary>
    public CancellationToken Token => _end.Token;

    /// <summary>Whether the generation has ended.</summary>
    public bool HasEnded => _end.IsCancellationRequested;

    /// <summary>Ends the generation: its loops and executors stop.</summary>
    public void End()
    {
        try
        {
            _end.Cancel();
        }
        catch (ObjectDisposedException)
        {
            // Ended and disposed already.
        }
    }

    /// <summary>Keeps <paramref name="task"/> so that the end can wait for it.</summary>
    public void Track(Task task)
    {
        lock (_lock)
        {
            _tasks.Add(task);
        }

        task.ContinueWith(
            static (ended, state) =>
            {
                var generation = (Generation)state!;
                lock (generation._lock)
                {
                    generation._tasks.Remove(ended);
                }
            },
            this,
            CancellationToken.None,
            TaskContinuationOptions.ExecuteSynchronously,
            TaskScheduler.Default);
    }

    /// <summary>Waits (at most <paramref name="timeout"/>) for the tracked tasks after the end.</summary>
    public async Task DrainAsync(TimeSpan timeout)
    {
        Task[] tasks;
        lock (_lock)
        {
            tasks = [.. _tasks];
        }

        await Task.WhenAny(Task.WhenAll(tasks), Task.Delay(timeout)).ConfigureAwait(false);
    }

    /// <inheritdoc />
    public void Dispose() => _end.Dispose();
}
