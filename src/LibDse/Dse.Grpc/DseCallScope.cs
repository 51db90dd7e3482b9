using System.Diagnostics;

namespace Dse.Grpc;

/// <summary>
/// The speculative context of one intercepted server call. Each synchronous segment of the handler (up to an await
/// that does not complete at once) runs as one action on the owner; between segments the call is detached as an
/// sthread, so a handler waiting on a slow call never holds up persistence or rollback. The handler's awaits post
/// their continuations here (this is their SynchronizationContext); a continuation runs only after the sthread is
/// merged back, and if that merge finds the call rolled back, the call is abandoned and its continuations never run.
/// </summary>
internal sealed class DseCallScope : SynchronizationContext
{
    [ThreadStatic]
    private static DseCallScope? t_segment;

    // The call whose handler flow this is. A segment is "current" only for code of its own flow: a continuation of
    // another call (or of background work) that runs inline on a segment's thread must not act as that call.
    private static readonly AsyncLocal<DseCallScope?> s_flow = new();

    private readonly StateObject _owner;
    private readonly CancellationToken _cancellation;
    private readonly Lock _lock = new();

    // Posted continuations and reply receipts, in order; created at the first post (most calls never post). Guarded
    // by _lock.
    private Queue<WorkItem>? _queue;

    // Completes once the handler finished and its last segment detached, or the call was abandoned. Created when the
    // first segment ends with the handler still running (the fast path never needs it).
    private TaskCompletionSource? _settled;

    // True while a segment runs or the pump drains the queue; at most one of them runs at a time. Guarded by _lock.
    private bool _busy;

    // True once the call settled: later posts run as plain thread-pool work, outside any action. Guarded by _lock.
    private bool _closed;

    // The call between segments. Touched only by whoever holds _busy, or by the interceptor after settling.
    private Sthread? _sthread;
    private Task? _handler;
    private Exception? _abandoned;

    public DseCallScope(StateObject owner, CancellationToken cancellation)
    {
        _owner = owner;
        _cancellation = cancellation;
    }

    /// <summary>The scope whose segment runs on this thread, if any: an outgoing call made now is made inside its action.</summary>
    public static DseCallScope? CurrentSegment => t_segment is { } scope && s_flow.Value == scope ? scope : null;

    public StateObject Owner => _owner;

    /// <summary>The call's cancellation (the client went away or the deadline passed).</summary>
    public CancellationToken Cancellation => _cancellation;

    /// <summary>Whether the call was abandoned: state it observed was rolled back, or its owner faulted, meanwhile.</summary>
    public bool IsAbandoned
    {
        get
        {
            lock (_lock)
            {
                return _abandoned is not null;
            }
        }
    }

    /// <summary>The call's sthread once settled: it carries everything the handler observed.</summary>
    public Sthread Sthread => _sthread ?? throw new InvalidOperationException("The call has not settled yet.");

    /// <summary>
    /// Runs <paramref name="handler"/> as the call's first segment (the caller has started the action) and completes
    /// once it finished and its last segment detached.
    /// </summary>
    /// <exception cref="DseRolledBackException">The call was abandoned: state it observed was rolled back.</exception>
    /// <exception cref="DseFaultedException">The owner faulted while the call was detached.</exception>
    public Task<T> RunAsync<T>(Func<Task<T>> handler) => SettleAsync(Start(handler));

    /// <summary>
    /// Runs <paramref name="handler"/> up to its first await that does not complete at once: the call's first segment,
    /// in the action the caller started. The action is still held when this returns. If the returned task is
    /// completed, end the call with <see cref="CloseInline"/> and end the action yourself; otherwise call
    /// <see cref="SettleAsync"/>.
    /// </summary>
    public Task<T> Start<T>(Func<Task<T>> handler)
    {
        lock (_lock)
        {
            _busy = true;
        }

        Task<T> task;
        var previous = Current;
        s_flow.Value = this;
        SetSynchronizationContext(this);
        t_segment = this;
        try
        {
            task = handler();
        }
        catch (Exception ex)
        {
            task = Task.FromException<T>(ex);
        }
        finally
        {
            t_segment = null;
            SetSynchronizationContext(previous);
        }

        _handler = task;
        return task;
    }

    /// <summary>
    /// The handler finished inside its first segment (the fast path: no await had to wait). Closes the call; work the
    /// handler left queued runs outside any action. The caller still holds the action and ends it.
    /// </summary>
    public void CloseInline()
    {
        WorkItem[] stray;
        lock (_lock)
        {
            _closed = true;
            _busy = false;
            stray = _queue is null ? [] : [.. _queue];
            _queue = null;
        }

        foreach (var item in stray)
        {
            RunClosed(item);
        }
    }

    /// <summary>Ends the first segment and completes once the handler finished and its last segment detached.</summary>
    /// <exception cref="DseRolledBackException">The call was abandoned: state it observed was rolled back.</exception>
    /// <exception cref="DseFaultedException">The owner faulted while the call was detached.</exception>
    public async Task<T> SettleAsync<T>(Task<T> task)
    {
        var settled = new TaskCompletionSource(TaskCreationOptions.RunContinuationsAsynchronously);
        lock (_lock)
        {
            _settled = settled;
        }

        // A handler that finishes outside a segment (it used ConfigureAwait(false)) settles the call once idle.
        _ = task.ContinueWith(static (_, s) => ((DseCallScope)s!).SettleIfIdle(), this, CancellationToken.None, TaskContinuationOptions.ExecuteSynchronously, TaskScheduler.Default);
        EndSegment();

        await settled.Task.ConfigureAwait(false);
        if (_abandoned is not null)
        {
            // Observe the handler's own fault, if any, so it is not reported as unobserved.
            _ = task.Exception;
            System.Runtime.ExceptionServices.ExceptionDispatchInfo.Throw(_abandoned);
        }

        return await task.ConfigureAwait(false);
    }

    /// <summary>
    /// Receives the header of a reply to an outgoing call into the call's sthread, between segments, before the
    /// handler's continuation can see the reply. Completes with <c>false</c> if the reply came from rolled-back state.
    /// </summary>
    public Task<bool> ReceiveAsync(DseHeader header)
    {
        var receipt = new TaskCompletionSource<bool>(TaskCreationOptions.RunContinuationsAsynchronously);
        Enqueue(new WorkItem(null, null, receipt, header));
        return receipt.Task;
    }

    /// <inheritdoc />
    public override void Post(SendOrPostCallback d, object? state)
    {
        ArgumentNullException.ThrowIfNull(d);
        Enqueue(new WorkItem(d, state, null, default));
    }

    /// <inheritdoc />
    public override void Send(SendOrPostCallback d, object? state)
    {
        ArgumentNullException.ThrowIfNull(d);
        if (t_segment != this)
        {
            throw new NotSupportedException("A DSE call cannot run work synchronously from outside its own segment; post it instead.");
        }

        d(state);
    }

    /// <inheritdoc />
    public override SynchronizationContext CreateCopy() => this;

    private void Enqueue(WorkItem item)
    {
        bool start = false;
        bool closed = false;
        Exception? abandoned;
        lock (_lock)
        {
            abandoned = _abandoned;
            if (abandoned is null)
            {
                closed = _closed;
                if (!closed)
                {
                    (_queue ??= new Queue<WorkItem>()).Enqueue(item);
                    start = !_busy;
                    _busy = true;
                }
            }
        }

        if (abandoned is not null)
        {
            // An abandoned call never runs again: its continuations are dropped (the handler's catch and finally
            // blocks included, since they would run outside any action on rolled-back state) and receipts fail.
            item.Receipt?.TrySetException(abandoned);
        }
        else if (closed)
        {
            RunClosed(item);
        }
        else if (start)
        {
            ThreadPool.UnsafeQueueUserWorkItem(static s => _ = s.PumpAsync(), this, preferLocal: false);
        }
    }

    /// <summary>Work for a call that has settled: it runs outside any action, as without DSE.</summary>
    private static void RunClosed(WorkItem item)
    {
        if (item.Receipt is { } receipt)
        {
            // A reply to a call the handler left running after it returned: nothing of the call awaits it any more.
            receipt.TrySetResult(true);
        }
        else
        {
            ThreadPool.UnsafeQueueUserWorkItem(static s => s.Callback!(s.State), item, preferLocal: false);
        }
    }

    /// <summary>Drains the queue: receipts go into the detached sthread; continuations run as segments.</summary>
    private async Task PumpAsync()
    {
        while (true)
        {
            WorkItem item;
            lock (_lock)
            {
                if (_queue is null || !_queue.TryDequeue(out item))
                {
                    _busy = false;
                    SettleIfDoneLocked();
                    return;
                }
            }

            var abandoned = Volatile.Read(ref _abandoned);
            if (abandoned is not null)
            {
                item.Receipt?.TrySetException(abandoned);
                continue;
            }

            Debug.Assert(_sthread is not null, "Between segments the call is detached.");
            try
            {
                if (item.Receipt is { } receipt)
                {
                    receipt.TrySetResult(await _sthread.ReceiveAsync(item.Header, _cancellation).ConfigureAwait(false));
                    continue;
                }

                if (!await _owner.MergeAsync(_sthread, _cancellation).ConfigureAwait(false))
                {
                    var lost = _sthread.Dependencies.Length > 0 ? _sthread.Dependencies[0] : new Dependency(_owner.Id, _owner.CurrentVersion);
                    Abandon(new DseRolledBackException(_owner.WorldLine, lost));
                    continue;
                }
            }
            catch (Exception ex)
            {
                // Rolled back, faulted, or the call was cancelled: the handler cannot go on. Abandoned first, so the
                // handler's reaction to the failed receipt is dropped rather than run.
                Abandon(ex);
                item.Receipt?.TrySetException(ex);
                continue;
            }

            RunSegment(item);
        }
    }

    private void RunSegment(WorkItem item)
    {
        var previous = Current;
        SetSynchronizationContext(this);
        t_segment = this;
        try
        {
            item.Callback!(item.State);
        }
        catch (Exception ex)
        {
            // Await continuations capture their exceptions in their tasks; a raw callback that throws ends the call.
            Abandon(ex);
        }
        finally
        {
            t_segment = null;
            SetSynchronizationContext(previous);
            _sthread = _owner.Detach();
        }
    }

    /// <summary>Ends a segment: detaches the call and hands queued work to the pump.</summary>
    private void EndSegment()
    {
        _sthread = _owner.Detach();
        bool start;
        lock (_lock)
        {
            start = _queue is { Count: > 0 };
            if (!start)
            {
                _busy = false;
                SettleIfDoneLocked();
            }
        }

        if (start)
        {
            ThreadPool.UnsafeQueueUserWorkItem(static s => _ = s.PumpAsync(), this, preferLocal: false);
        }
    }

    private void SettleIfIdle()
    {
        lock (_lock)
        {
            if (!_busy)
            {
                SettleIfDoneLocked();
            }
        }
    }

    private void SettleIfDoneLocked()
    {
        if (_abandoned is not null || _handler is { IsCompleted: true })
        {
            _closed = true;
            _settled?.TrySetResult();
        }
    }

    private void Abandon(Exception reason)
    {
        lock (_lock)
        {
            _abandoned ??= reason;
        }
    }

    private readonly record struct WorkItem(SendOrPostCallback? Callback, object? State, TaskCompletionSource<bool>? Receipt, DseHeader Header);
}
