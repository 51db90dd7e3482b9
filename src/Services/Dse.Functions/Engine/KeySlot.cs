namespace Dse.Functions.Engine;

/// <summary>
/// One transaction's view of one entity on the site that owns it: whether it read or wrote it, its buffered write, and
/// the accesses its calls made (to find two calls that touched it with a write and no await between them).
/// </summary>
internal sealed class KeySlot(EntityAddress address)
{
    private StateAccess _first;
    private List<StateAccess>? _more;
    private int _count;

    public EntityAddress Address { get; } = address;

    public bool Read { get; set; }

    public bool Written { get; set; }

    public object? Value { get; set; }

    /// <summary>Records an access; every earlier access it conflicts with goes to <paramref name="onConflict"/>.</summary>
    public void Record<TState>(in StateAccess access, TState state, Action<TState, StateAccess> onConflict)
    {
        for (int i = 0; i < _count; i++)
        {
            StateAccess earlier = i == 0 ? _first : _more![i - 1];
            if (CallOrder.Conflict(earlier, access))
            {
                onConflict(state, earlier);
            }
        }

        // The same call at the same point of its body adds nothing new.
        StateAccess last = _count == 0 ? default : _count == 1 ? _first : _more![^1];
        if (_count > 0 && ReferenceEquals(last.Node, access.Node) && last.Issued == access.Issued
            && last.Observed == access.Observed && (last.Write || !access.Write))
        {
            return;
        }

        if (_count == 0)
        {
            _first = access;
        }
        else
        {
            (_more ??= new List<StateAccess>(2)).Add(access);
        }

        _count++;
    }
}

/// <summary>One transaction's state on one site for one run: its slots, and in the fallback phase its place in the wait order.</summary>
internal sealed class TxLocal(TxRun run)
{
    public TxRun Run { get; } = run;

    public Dictionary<EntityAddress, KeySlot> Slots { get; } = [];

    /// <summary>Fallback: the keys this transaction touched here in its lock-free run (its locks).</summary>
    public HashSet<EntityAddress>? Footprint { get; set; }

    /// <summary>Fallback: lower transactions that must finish here before this one runs here.</summary>
    public int Blockers { get; set; }

    /// <summary>Fallback: higher transactions waiting for this one here.</summary>
    public List<TxLocal>? Dependents { get; set; }

    /// <summary>Fallback: the transaction's root has decided (<see cref="Commit"/> says how).</summary>
    public bool Unlocked { get; set; }

    /// <summary>Fallback: whether the transaction committed.</summary>
    public bool Commit { get; set; }

    /// <summary>Fallback: its writes are applied here (when committed) and its dependents released.</summary>
    public bool Released { get; set; }

    /// <summary>Fallback: calls that arrived while <see cref="Blockers"/> was not zero.</summary>
    public Queue<Invocation>? Waiting { get; set; }

    public KeySlot Slot(EntityAddress address)
    {
        if (!Slots.TryGetValue(address, out KeySlot? slot))
        {
            slot = new KeySlot(address);
            Slots.Add(address, slot);
        }

        return slot;
    }
}
