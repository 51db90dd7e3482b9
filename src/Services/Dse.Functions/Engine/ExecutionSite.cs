namespace Dse.Functions.Engine;

/// <summary>
/// A place where calls run: one thread, a message queue, committed state for the entities it owns, and each
/// transaction's buffered reads and writes there. A partition of <see cref="EntityRuntime"/> and the single site of
/// <see cref="SerialEntityRunner"/> are sites; the call machinery (<see cref="Invocation"/>) is the same on both.
/// </summary>
internal abstract class ExecutionSite
{
    private readonly SiteQueue _queue = new();
    private Thread? _thread;

    protected ExecutionSite(EntityRegistry registry, int maxCallDepth)
    {
        Registry = registry;
        MaxCallDepth = maxCallDepth;
        SyncContext = new SiteSynchronizationContext(this);
    }

    public EntityRegistry Registry { get; }

    public int MaxCallDepth { get; }

    /// <summary>The committed state of the entities this site owns.</summary>
    public Dictionary<EntityAddress, object?> Committed { get; } = [];

    public SynchronizationContext SyncContext { get; }

    public bool OnSiteThread => ReferenceEquals(Thread.CurrentThread, _thread);

    /// <summary>The site that owns <paramref name="address"/>.</summary>
    public abstract ExecutionSite SiteOf(EntityAddress address);

    /// <summary>The slot of the invocation's transaction for the invocation's entity, created on first use.</summary>
    public abstract KeySlot SlotFor(Invocation invocation);

    /// <summary>A call arrived for an entity this site owns.</summary>
    public abstract void OnInvoke(Invocation invocation);

    /// <summary>Every part of the transaction's call graph has returned its credit: the transaction is complete.</summary>
    protected abstract void OnTransactionComplete(TxRun tx);

    public bool TryReadCommitted(EntityAddress address, out object? value) => Committed.TryGetValue(address, out value);

    public virtual void Post(SiteMessage message) => _queue.Enqueue(message);

    public void Dispatch(Invocation invocation) => SiteOf(invocation.Target).Post(new InvokeMessage(invocation));

    /// <summary>State is touched, and calls are made, only on the site's thread (a body that awaited something else, such as <c>Task.Run</c>, is refused).</summary>
    public void CheckThread(Invocation invocation)
    {
        if (!OnSiteThread)
        {
            throw new InvalidOperationException(
                $"{invocation.Target}.{invocation.Method} ran on a thread that is not its partition's: an entity method may await only calls to entities (not Task.Run, Task.Delay, ConfigureAwait(false) or I/O).");
        }
    }

    /// <summary>Credit coming back from a call with no caller to reply to; on the root's site, or posted there.</summary>
    public void ReturnCredit(Invocation invocation, UInt128 credit, in TxSignals signals, byte[]? rootResult)
    {
        if (invocation.Parent is null)
        {
            OnCredit(invocation.Tx, credit, signals, rootResult);
        }
        else
        {
            SiteOf(invocation.Tx.Request.Target).Post(new CreditMessage(invocation.Tx, credit, signals));
        }
    }

    public void OnCredit(TxRun tx, UInt128 credit, in TxSignals signals, byte[]? rootResult)
    {
        tx.Ledger += credit;
        tx.Signals.Merge(signals);
        if (rootResult is not null)
        {
            tx.RootResult = rootResult;
        }

        if (tx.Ledger > AckCredit.Full || tx.Completed)
        {
            throw new InvalidOperationException($"Credit of {tx} came back twice: the call graph's accounting is broken.");
        }

        if (tx.Ledger == AckCredit.Full)
        {
            tx.Completed = true;
            OnTransactionComplete(tx);
        }
    }

    /// <summary>Starts the root call of <paramref name="tx"/> on this site (the owner of its target).</summary>
    protected Invocation StartRoot(TxRun tx)
    {
        TransactionRequest request = tx.Request;
        var root = new Invocation(tx, CallNode.Root(), parent: null, request.Target, request.Method, request.Args) { Credit = AckCredit.Full };
        OnInvoke(root);
        return root;
    }

    /// <summary>Runs the message loop on a new dedicated thread until <see cref="StopLoop"/>.</summary>
    protected void StartThread(string name)
    {
        _thread = new Thread(() => RunLoop(static () => false)) { IsBackground = true, Name = name };
        _thread.Start();
    }

    /// <summary>Runs the message loop on the calling thread until <paramref name="done"/> holds.</summary>
    protected void RunLoop(Func<bool> done)
    {
        _thread = Thread.CurrentThread;
        SynchronizationContext? previous = SynchronizationContext.Current;
        SynchronizationContext.SetSynchronizationContext(SyncContext);
        try
        {
            var batch = new List<SiteMessage>(256);
            while (!done())
            {
                if (!_queue.TakeAll(batch, wait: true))
                {
                    return;
                }

                foreach (SiteMessage message in batch)
                {
                    Handle(message);
                }

                batch.Clear();
            }
        }
        finally
        {
            SynchronizationContext.SetSynchronizationContext(previous);
        }
    }

    /// <summary>Handles one message; a site with protocol stages may hold it back.</summary>
    protected virtual void Handle(SiteMessage message) => message.Handle(this);

    protected void StopLoop() => _queue.Close();

    /// <summary>Waits for the dedicated thread to end.</summary>
    protected void JoinThread() => _thread?.Join();

    private sealed class SiteSynchronizationContext(ExecutionSite site) : SynchronizationContext
    {
        public override void Post(SendOrPostCallback d, object? state) => site.Post(new ContinuationMessage(d, state));

        public override void Send(SendOrPostCallback d, object? state) =>
            throw new NotSupportedException("A partition's code does not block on another thread.");

        public override SynchronizationContext CreateCopy() => this;
    }
}

/// <summary>A many-writer, one-reader queue that hands the reader everything waiting at once.</summary>
internal sealed class SiteQueue
{
    private readonly object _lock = new();
    private readonly List<SiteMessage> _items = new(256);
    private bool _closed;
    private bool _readerWaiting;

    public void Enqueue(SiteMessage message)
    {
        lock (_lock)
        {
            if (_closed)
            {
                return;
            }

            _items.Add(message);
            if (_readerWaiting)
            {
                Monitor.Pulse(_lock);
            }
        }
    }

    /// <summary>Moves every waiting message into <paramref name="into"/>; false once closed and drained.</summary>
    public bool TakeAll(List<SiteMessage> into, bool wait)
    {
        lock (_lock)
        {
            while (_items.Count == 0)
            {
                if (_closed || !wait)
                {
                    return !_closed;
                }

                _readerWaiting = true;
                Monitor.Wait(_lock);
                _readerWaiting = false;
            }

            into.AddRange(_items);
            _items.Clear();
            return true;
        }
    }

    public void Close()
    {
        lock (_lock)
        {
            _closed = true;
            Monitor.PulseAll(_lock);
        }
    }
}
