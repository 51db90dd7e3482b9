namespace Dse.Tests;

/// <summary>
/// Storage for a test StateObject that outlives the instance (so a restart sees it), with durability under the test's
/// control: persists wait in <see cref="Pending"/> until completed, and a crash drops them.
/// </summary>
internal sealed class MemoryVersionStore : IVersionStore
{
    private readonly Lock _lock = new();

    public bool AutoDurable { get; set; } = true;

    public SortedDictionary<long, Snapshot> Durable { get; } = [];

    public List<PendingPersist> Pending { get; } = [];

    public int PersistCount { get; private set; }

    private TaskCompletionSource _added = new(TaskCreationOptions.RunContinuationsAsynchronously);

    /// <summary>Completes once at least one persist is pending.</summary>
    public async Task WaitForPendingAsync()
    {
        while (true)
        {
            Task added;
            lock (_lock)
            {
                if (Pending.Count > 0)
                {
                    return;
                }

                added = _added.Task;
            }

            await added.WaitAsync(TimeSpan.FromSeconds(30));
        }
    }

    public void Add(long version, byte[] metadata, long[] history, PersistCompletion completion)
    {
        bool complete;
        lock (_lock)
        {
            PersistCount++;
            complete = AutoDurable;
            if (complete)
            {
                Durable[version] = new Snapshot(metadata, history);
            }
            else
            {
                Pending.Add(new PendingPersist(version, new Snapshot(metadata, history), completion));
                _added.TrySetResult();
                _added = new(TaskCreationOptions.RunContinuationsAsynchronously);
            }
        }

        if (complete)
        {
            completion.SetDurable();
        }
    }

    public Task<int> CompleteOldestAsync(int count) => Task.FromResult(CompleteOldest(count));

    public Task CrashAsync(Random random)
    {
        Crash();
        return Task.CompletedTask;
    }

    public Task ReopenAsync() => Task.CompletedTask;

    public ValueTask<long[]?> RestoreAsync(long version) => ValueTask.FromResult(RestoreTo(version)?.History);

    /// <summary>Makes the oldest <paramref name="count"/> pending persists durable, in order.</summary>
    public int CompleteOldest(int count = int.MaxValue)
    {
        int done = 0;
        while (done < count)
        {
            PendingPersist next;
            lock (_lock)
            {
                if (Pending.Count == 0)
                {
                    break;
                }

                next = Pending[0];
                Pending.RemoveAt(0);
                Durable[next.Version] = next.Snapshot;
            }

            next.Completion.SetDurable();
            done++;
        }

        return done;
    }

    /// <summary>A crash: what was not durable is gone.</summary>
    public void Crash()
    {
        lock (_lock)
        {
            Pending.Clear();
        }
    }

    /// <summary>Restore(v): nothing after v stays listed, including persists in flight.</summary>
    public Snapshot? RestoreTo(long version)
    {
        lock (_lock)
        {
            Pending.Clear();
            foreach (var v in Durable.Keys.Where(k => k > version).ToList())
            {
                Durable.Remove(v);
            }

            if (version == 0)
            {
                return null;
            }

            return Durable.TryGetValue(version, out var s)
                ? s
                : throw new InvalidOperationException($"Version {version} is not in storage (have: {string.Join(",", Durable.Keys)}).");
        }
    }

    public void PruneThrough(long version)
    {
        lock (_lock)
        {
            foreach (var v in Durable.Keys.Where(k => k <= version).ToList())
            {
                Durable.Remove(v);
            }
        }
    }

    public IReadOnlyList<PersistedVersion> List()
    {
        lock (_lock)
        {
            return Durable.Select(kv => new PersistedVersion(kv.Key, kv.Value.Metadata)).ToList();
        }
    }

    internal sealed record Snapshot(byte[] Metadata, long[] History);

    internal sealed record PendingPersist(long Version, Snapshot Snapshot, PersistCompletion Completion);
}
