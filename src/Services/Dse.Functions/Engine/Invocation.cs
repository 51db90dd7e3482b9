namespace Dse.Functions.Engine;

/// <summary>
/// One call inside a transaction, run on the site that owns its entity: the method's body, the calls it makes, the
/// replies it receives (delivered to its awaits strictly in issue order, so what the body has seen complete at any
/// point is a function of the program, not of timing), its credit, and the signals it passes up.
/// </summary>
/// <remarks>
/// An invocation completes when its body has returned and every awaited call it issued has been delivered (an
/// implicit join); only then do its one-way calls start, each with an even share of its remaining credit. Its caller
/// sees a failure at its <c>await</c> only when this body threw; every failure anywhere reaches the root in
/// <see cref="TxSignals"/> and aborts the transaction.
/// </remarks>
internal sealed class Invocation : IEntityCaller, IEntityFactory
{
    private static readonly Task<Unit> CompletedUnit = Task.FromResult(default(Unit));

    private readonly List<ChildCall> _children = [];
    private List<Invocation>? _oneWays;
    private int _observed;
    private int _awaitedPending;
    private bool _bodyDone;
    private bool _bodyFailed;
    private bool _completed;
    private bool _delivering;
    private byte[] _result = WireFormat.Empty;
    private EntityAbort? _ownFailure;
    private TxSignals _signals;
    private KeySlot? _slot;
    private object? _readCopy;
    private EntityContext? _context;
    private IEntityBinding? _instance;

    public Invocation(TxRun tx, CallNode node, Invocation? parent, EntityAddress target, string method, byte[] args)
    {
        Tx = tx;
        Node = node;
        Parent = parent;
        Target = target;
        Method = method;
        Args = args;
    }

    public TxRun Tx { get; }

    public CallNode Node { get; }

    public Invocation? Parent { get; }

    public EntityAddress Target { get; }

    public string Method { get; }

    public byte[] Args { get; }

    /// <summary>The credit this call holds; set by its issuer before dispatch, then owned by its site.</summary>
    public UInt128 Credit;

    /// <summary>The site running this call (set when it starts).</summary>
    public ExecutionSite? Site { get; private set; }

    public EntityContext Context => _context ??= new EntityContext(Tx.Tid, Tx.Epoch, Tx.Timestamp, Seed());

    public IEntityFactory Factory => this;

    /// <summary>Runs the body on <paramref name="site"/> (its thread).</summary>
    public void Start(ExecutionSite site)
    {
        Site = site;
        if (!Target.Type.Methods.TryGetValue(Method, out EntityMethod? method))
        {
            FailBody(new UnknownEntityException($"Entity type {Target.Type.Name} has no method {Method}."));
            return;
        }

        object? args;
        try
        {
            args = method.DecodeArgs(Args);
        }
        catch (EntityArgumentException e)
        {
            FailBody(e);
            return;
        }

        Task<byte[]> body;
        try
        {
            _instance = Target.Type.CreateInstance();
            _instance.Invocation = this;
            body = method.InvokeAsync(_instance, args);
        }
        catch (Exception e)
        {
            body = Task.FromException<byte[]>(e);
        }

        if (body.IsCompleted)
        {
            OnBodyEnd(body);
        }
        else
        {
            body.GetAwaiter().UnsafeOnCompleted(() => OnBodyEnd(body));
        }
    }

    /// <summary>A reply to call <paramref name="index"/> of this body arrived (on this site's thread).</summary>
    public void OnChildReply(int index, byte[] result, EntityAbort? failure, UInt128 credit, in TxSignals signals)
    {
        ChildCall child = _children[index];
        child.Ready = true;
        child.Result = result;
        child.Failure = failure;
        Credit += credit;
        _signals.Merge(signals);
        Deliver();
        TryComplete();
    }

    Task<TResult> IEntityCaller.CallAsync<TArgs, TResult>(EntityAddress target, string method, TArgs args, bool oneWay)
    {
        ExecutionSite site = CheckActive();
        byte[] encoded;
        try
        {
            encoded = WireFormat.Encode(args);
        }
        catch (Exception e) when (e is not OutOfMemoryException)
        {
            // Before the call takes a place in the graph: an argument that cannot be copied fails the caller.
            var refused = new EntityArgumentException($"The arguments of {target}.{method} cannot be serialized: {e.Message}", e);
            _signals.AddFailure(Node, Abort(refused));
            throw refused;
        }

        int index = _children.Count;
        CallNode node = Node.Child(index, oneWay, _observed);
        var call = new ChildCall();
        _children.Add(call);

        EntityAbort? refusal = null;
        UInt128 share = UInt128.Zero;
        if (_completed)
        {
            refusal = Abort(new InvalidOperationException(
                $"{Target}.{Method} made a call to {target}.{method} after it had returned; await every call inside the method."));
        }
        else if (node.Depth > site.MaxCallDepth)
        {
            refusal = Abort(new CallGraphLimitException(
                $"The call {target}.{method} at {node} is deeper than the limit of {site.MaxCallDepth} nested calls."));
        }
        else if (!oneWay && !AckCredit.TrySplitHalf(ref Credit, out share))
        {
            refusal = Abort(new CallGraphLimitException(
                $"The call {target}.{method} at {node} cannot be tracked: its caller's completion credit is used up (too many nested or parallel calls)."));
        }

        if (refusal is not null)
        {
            _signals.AddFailure(node, refusal);
            call.Ready = true;
            Deliver();
            return Task.FromException<TResult>(new EntityTransactionAbortedException(refusal));
        }

        var child = new Invocation(Tx, node, this, target, method, encoded);
        if (oneWay)
        {
            (_oneWays ??= []).Add(child);
            call.Ready = true;
            Deliver();
            return typeof(TResult) == typeof(Unit) ? (Task<TResult>)(object)CompletedUnit : Task.FromResult(default(TResult)!);
        }

        child.Credit = share;
        var sink = new ResultSink<TResult>();
        call.Sink = sink;
        _awaitedPending++;
        site.Dispatch(child);
        return sink.Task;
    }

    T IEntityFactory.Get<T>(object key)
    {
        ExecutionSite site = CheckActive();
        try
        {
            return site.Registry.CreateProxy<T>(key, this);
        }
        catch (Exception e) when (e is UnknownEntityException or EntityArgumentException)
        {
            _signals.AddFailure(Node, Abort(e));
            throw;
        }
    }

    /// <summary>A read of the entity's state: the transaction's own write, else the site's committed state, else the initial state.</summary>
    public TState ReadState<TState>(IEntityBinding binding)
    {
        KeySlot slot = Access(write: false);
        if (slot.Written)
        {
            return (TState)slot.Value!;
        }

        slot.Read = true;
        if (_readCopy is not null)
        {
            return (TState)_readCopy;
        }

        object? value = Site!.TryReadCommitted(Target, out object? committed) ? committed : binding.InitialState;
        if (Target.Type.CopyStateOnRead && value is not null)
        {
            value = _readCopy = StateCopy.Of(value, Target.Type.StateType);
        }

        return (TState)value!;
    }

    /// <summary>A buffered write of the entity's state, applied if the transaction commits.</summary>
    public void WriteState(object? value)
    {
        KeySlot slot = Access(write: true);
        slot.Written = true;
        slot.Value = value;
        _readCopy = null;
    }

    private KeySlot Access(bool write)
    {
        ExecutionSite site = CheckActive();
        if (_completed)
        {
            throw new InvalidOperationException($"{Target}.{Method} touched its state after it had returned; await every call inside the method.");
        }

        KeySlot slot = _slot ??= site.SlotFor(this);
        var access = new StateAccess(Node, _observed, _children.Count, write);
        slot.Record(access, this, static (self, earlier) => self.OnConflict(earlier));
        return slot;
    }

    private void OnConflict(StateAccess earlier)
    {
        string first = earlier.Node.ToString();
        string second = Node.ToString();
        if (string.CompareOrdinal(first, second) > 0)
        {
            (first, second) = (second, first);
        }

        _signals.AddRace(new EntityAbort(
            typeof(ConcurrentEntityAccessException).FullName!,
            $"Calls {first} and {second} of one transaction both touched {Target}, at least one writing, and no await ordered them.",
            Target.Type.Name,
            KeyText));
    }

    /// <summary>The fallback phase found this call touching a key outside the transaction's lock-free read/write set here.</summary>
    public void NoteDiverged() => _signals.Diverged = true;

    private ExecutionSite CheckActive()
    {
        ExecutionSite site = Site ?? throw new InvalidOperationException("The invocation has not started.");
        site.CheckThread(this);
        return site;
    }

    private void OnBodyEnd(Task<byte[]> body)
    {
        if (!Site!.OnSiteThread)
        {
            Site.Post(new ContinuationMessage(_ => OnBodyEnd(body), null));
            return;
        }

        if (body.IsCompletedSuccessfully)
        {
            _result = body.Result;
            _bodyDone = true;
            TryComplete();
            return;
        }

        Exception error = body.Exception?.InnerException ?? new TaskCanceledException($"{Target}.{Method} was cancelled.");
        if (error is EntityTransactionAbortedException aborted)
        {
            // A failure passed on from a call: its origin is already in the signals.
            _bodyDone = true;
            _bodyFailed = true;
            _ownFailure = aborted.Abort;
            TryComplete();
            return;
        }

        FailBody(error);
    }

    private void FailBody(Exception error)
    {
        _bodyDone = true;
        _bodyFailed = true;
        _ownFailure = Abort(error);
        _signals.AddFailure(Node, _ownFailure);
        TryComplete();
    }

    private void Deliver()
    {
        if (_delivering)
        {
            return;
        }

        _delivering = true;
        try
        {
            while (_observed < _children.Count && _children[_observed].Ready)
            {
                ChildCall call = _children[_observed];
                _observed++;
                if (call.Sink is not null)
                {
                    _awaitedPending--;

                    // Runs the awaiting continuation inline, on this thread: it sees exactly the calls delivered so far.
                    call.Sink.Deliver(call.Result, call.Failure);
                    call.Result = null;
                }
            }
        }
        finally
        {
            _delivering = false;
        }
    }

    private void TryComplete()
    {
        if (_completed || !_bodyDone || _awaitedPending > 0 || _delivering)
        {
            return;
        }

        _completed = true;
        if (_instance is not null)
        {
            _instance.Invocation = null;
        }

        UInt128 credit = Credit;
        Credit = UInt128.Zero;
        if (!_bodyFailed && _oneWays is { Count: > 0 } oneWays)
        {
            // The one-way calls share the credit with this call's own return, so that what this call reports (its
            // failures, races, divergence) comes back with credit of its own: the graph cannot complete without it.
            var shares = new UInt128[oneWays.Count + 1];
            if (AckCredit.TrySplitEven(credit, shares.Length, shares))
            {
                credit = shares[0];
                for (int i = 0; i < oneWays.Count; i++)
                {
                    oneWays[i].Credit = shares[i + 1];
                    Site!.Dispatch(oneWays[i]);
                }
            }
            else
            {
                _signals.AddFailure(Node, Abort(new CallGraphLimitException(
                    $"{Target}.{Method} made {oneWays.Count} one-way calls, more than its completion credit can be split into.")));
            }
        }

        if (Parent is not null && !Node.OneWay)
        {
            Parent.Site!.Post(new ReplyMessage(Parent, Node.Index, _result, _ownFailure, credit, _signals));
        }
        else
        {
            Site!.ReturnCredit(this, credit, _signals, Parent is null ? _result : null);
        }
    }

    private EntityAbort Abort(Exception error) =>
        new(error.GetType().FullName ?? error.GetType().Name, error.Message, Target.Type.Name, KeyText);

    private string KeyText => Target.Key.ToString() ?? "";

    private ulong Seed()
    {
        ulong h = Tx.Seed ^ ((ulong)Tx.Tid * 0x9E3779B97F4A7C15UL);
        for (CallNode? n = Node; n is not null; n = n.Parent)
        {
            h = (h ^ (ulong)(uint)n.Index ^ (n.OneWay ? 0x8000_0000_0000_0000UL : 0)) * 0xBF58476D1CE4E5B9UL;
            h ^= h >> 31;
        }

        return h;
    }

    public override string ToString() => $"{Tx} {Node} {Target}.{Method}";

    private sealed class ChildCall
    {
        public bool Ready;
        public byte[]? Result;
        public EntityAbort? Failure;
        public IResultSink? Sink;
    }
}

/// <summary>Where an awaited call's reply goes: the task its caller awaits.</summary>
internal interface IResultSink
{
    void Deliver(byte[]? result, EntityAbort? failure);
}

/// <summary>
/// The task of an awaited call. Its continuations run inline on the delivering thread (the caller's site), which is
/// what makes delivery order the order the caller observes.
/// </summary>
internal sealed class ResultSink<TResult> : TaskCompletionSource<TResult>, IResultSink
{
    public void Deliver(byte[]? result, EntityAbort? failure)
    {
        if (failure is not null)
        {
            TrySetException(new EntityTransactionAbortedException(failure));
            return;
        }

        TResult value;
        try
        {
            value = WireFormat.Decode<TResult>(result ?? WireFormat.Empty);
        }
        catch (Exception e) when (e is not OutOfMemoryException)
        {
            // The proxy and the method disagree on the result type (an entity compiled against another interface).
            TrySetException(new EntityArgumentException($"A call's result ({result?.Length ?? 0} bytes) does not deserialize as {typeof(TResult).Name}: {e.Message}", e));
            return;
        }

        TrySetResult(value);
    }
}
