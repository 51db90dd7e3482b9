using System.Collections.Concurrent;
using System.Runtime.ExceptionServices;
using FASTER.core;

namespace Dse.Storage;

/// <summary>
/// Wraps FASTER's <see cref="DeviceLogCommitCheckpointManager"/> so that its blocking commit-record writes cannot starve
/// the .NET thread pool. FASTER calls a commit manager synchronously, often on a thread-pool thread (a page flush's
/// completion), and that manager blocks the thread on a semaphore until its write completes; the write's completion in
/// turn needs a pool thread. With a few logs committing at once every pool thread can be blocked that way, and the pool
/// grows by about one thread a second: on a 2-core machine sixteen FasterLogs managed about one commit a second between
/// them (benchmark <c>commit-pool</c>). This wrapper runs the writes of a call made on a pool thread on its own
/// thread and waits for them in a way the pool sees as blocking (<see cref="Task.Wait()"/>), so the pool adds a thread
/// at once instead of stalling; a call on any other thread runs inline.
/// </summary>
/// <remarks>
/// Every member of <see cref="ILogCommitManager"/> and <see cref="ICheckpointManager"/> is forwarded; the ones that read
/// or write the commit device (commits, removals, commit lists and metadata, recovery's cleanup) move off the pool, and
/// run one at a time whichever thread they come from (the inner manager waits for all its I/O on one semaphore, so two at
/// once could wake each other's caller early). One thread per manager, started at the first call from a pool thread,
/// serves the pool's calls in order. Disposing stops that thread and disposes the inner manager; if a call is still
/// stuck in a device operation after <see cref="DisposeTimeout"/>, both are left behind rather than disposed under it.
/// </remarks>
public sealed class PoolSafeCommitManager : ILogCommitManager, ICheckpointManager
{
    private readonly DeviceLogCommitCheckpointManager _inner;

    // Work handed to the writer thread; completed (no more adds) on Dispose.
    private readonly BlockingCollection<WorkItem> _work = [];
    private readonly Lock _start = new();

    // Held while a call runs on the inner manager, on the writer thread or inline: one at a time.
    private readonly Lock _serial = new();
    private Thread? _writer;
    private int _disposed;
    private long _offloaded;

    /// <summary>Wraps <paramref name="inner"/>, which this instance owns from now on.</summary>
    /// <param name="inner">FASTER's device commit manager.</param>
    public PoolSafeCommitManager(DeviceLogCommitCheckpointManager inner)
    {
        ArgumentNullException.ThrowIfNull(inner);
        _inner = inner;
    }

    /// <summary>How long <see cref="Dispose"/> waits for the writer thread to finish the calls handed to it. 30 seconds.</summary>
    public static TimeSpan DisposeTimeout { get; } = TimeSpan.FromSeconds(30);

    /// <summary>The number of calls that ran on the writer thread because they came from a pool thread (for tests and diagnostics).</summary>
    public long OffloadedCalls => Interlocked.Read(ref _offloaded);

    /// <inheritdoc />
    public void Commit(long beginAddress, long untilAddress, byte[] commitMetadata, long commitNum, bool forceWriteMetadata) =>
        Run(() => _inner.Commit(beginAddress, untilAddress, commitMetadata, commitNum, forceWriteMetadata));

    /// <inheritdoc />
    public IEnumerable<long> ListCommits() => Run(() => _inner.ListCommits().ToList());

    /// <inheritdoc />
    public void RemoveCommit(long commitNum) => Run(() => _inner.RemoveCommit(commitNum));

    /// <inheritdoc />
    public void RemoveAllCommits() => Run(_inner.RemoveAllCommits);

    /// <inheritdoc />
    public byte[] GetCommitMetadata(long commitNum) => Run(() => _inner.GetCommitMetadata(commitNum));

    /// <inheritdoc />
    public void OnRecovery(long commitNum) => Run(() => _inner.OnRecovery(commitNum));

    /// <inheritdoc />
    public void InitializeIndexCheckpoint(Guid indexToken) => _inner.InitializeIndexCheckpoint(indexToken);

    /// <inheritdoc />
    public void InitializeLogCheckpoint(Guid logToken) => _inner.InitializeLogCheckpoint(logToken);

    /// <inheritdoc />
    public void CommitIndexCheckpoint(Guid indexToken, byte[] commitMetadata) => Run(() => _inner.CommitIndexCheckpoint(indexToken, commitMetadata));

    /// <inheritdoc />
    public void CommitLogCheckpoint(Guid logToken, byte[] commitMetadata) => Run(() => _inner.CommitLogCheckpoint(logToken, commitMetadata));

    /// <inheritdoc />
    public void CheckpointVersionShift(long oldVersion, long newVersion) => _inner.CheckpointVersionShift(oldVersion, newVersion);

    /// <inheritdoc />
    public void CommitLogIncrementalCheckpoint(Guid logToken, long version, byte[] commitMetadata, DeltaLog deltaLog) =>
        Run(() => _inner.CommitLogIncrementalCheckpoint(logToken, version, commitMetadata, deltaLog));

    /// <inheritdoc />
    public byte[] GetIndexCheckpointMetadata(Guid indexToken) => Run(() => _inner.GetIndexCheckpointMetadata(indexToken));

    /// <inheritdoc />
    public byte[] GetLogCheckpointMetadata(Guid logToken, DeltaLog deltaLog, bool scanDelta, long recoverTo) =>
        Run(() => _inner.GetLogCheckpointMetadata(logToken, deltaLog, scanDelta, recoverTo));

    /// <inheritdoc />
    public IDevice GetIndexDevice(Guid indexToken) => _inner.GetIndexDevice(indexToken);

    /// <inheritdoc />
    public IDevice GetSnapshotLogDevice(Guid token) => _inner.GetSnapshotLogDevice(token);

    /// <inheritdoc />
    public IDevice GetSnapshotObjectLogDevice(Guid token) => _inner.GetSnapshotObjectLogDevice(token);

    /// <inheritdoc />
    public IDevice GetDeltaLogDevice(Guid token) => _inner.GetDeltaLogDevice(token);

    /// <inheritdoc />
    public IEnumerable<Guid> GetIndexCheckpointTokens() => _inner.GetIndexCheckpointTokens();

    /// <inheritdoc />
    public IEnumerable<Guid> GetLogCheckpointTokens() => _inner.GetLogCheckpointTokens();

    /// <inheritdoc />
    public void Purge(Guid token) => Run(() => _inner.Purge(token));

    /// <inheritdoc />
    public void PurgeAll() => Run(_inner.PurgeAll);

    /// <inheritdoc />
    public void OnRecovery(Guid indexToken, Guid logToken) => Run(() => _inner.OnRecovery(indexToken, logToken));

    /// <summary>Stops the writer thread (after the calls handed to it) and disposes the inner manager.</summary>
    public void Dispose()
    {
        if (Interlocked.Exchange(ref _disposed, 1) != 0)
        {
            return;
        }

        Thread? writer;
        lock (_start)
        {
            _work.CompleteAdding();
            writer = _writer;
        }

        if (writer is not null && !writer.Join(DisposeTimeout))
        {
            // A call is stuck in a device operation that never completes: disposing the manager under it could corrupt
            // what it writes. Leave both to the process's end.
            return;
        }

        _work.Dispose();
        _inner.Dispose();
    }

    /// <summary>Runs <paramref name="read"/> as <see cref="Run(Action)"/> does and returns its result.</summary>
    private T Run<T>(Func<T> read)
    {
        T result = default!;
        Run(() =>
        {
            result = read();
        });
        return result;
    }

    /// <summary>Runs <paramref name="action"/> inline, or, on a pool thread, on the writer thread while this one waits.</summary>
    private void Run(Action action)
    {
        if (!Thread.CurrentThread.IsThreadPoolThread || Volatile.Read(ref _disposed) != 0)
        {
            RunSerially(action);
            return;
        }

        var item = new WorkItem(action);
        lock (_start)
        {
            // Checked under the lock Dispose completes the queue under: once disposed, the queue is not touched again.
            if (Volatile.Read(ref _disposed) != 0)
            {
                RunSerially(action);
                return;
            }

            _work.Add(item);
            if (_writer is null)
            {
                _writer = new Thread(Drain) { IsBackground = true, Name = "Dse commit writer" };
                _writer.Start();
            }
        }

        Interlocked.Increment(ref _offloaded);
        try
        {
            // FASTER's commit interface is synchronous, so the caller must block until the write is done. Task.Wait, unlike
            // the inner manager's semaphore, tells the thread pool that this thread is blocked, and the pool makes up for it.
            item.Done.Task.Wait();
        }
        catch (AggregateException e) when (e.InnerExceptions.Count == 1)
        {
            ExceptionDispatchInfo.Capture(e.InnerExceptions[0]).Throw();
        }
    }

    private void Drain()
    {
        foreach (var item in _work.GetConsumingEnumerable())
        {
            try
            {
                RunSerially(item.Action);
                item.Done.SetResult();
            }
#pragma warning disable CA1031 // Not swallowed: the caller waiting for the item rethrows it.
            catch (Exception e)
#pragma warning restore CA1031
            {
                item.Done.SetException(e);
            }
        }
    }

    private void RunSerially(Action action)
    {
        lock (_serial)
        {
            action();
        }
    }

    private sealed class WorkItem(Action action)
    {
        public Action Action { get; } = action;

        // Continuations run asynchronously: the writer thread never runs the caller's code.
        public TaskCompletionSource Done { get; } = new(TaskCreationOptions.RunContinuationsAsynchronously);
    }
}
