using Dse.Functions.Engine;

namespace Dse.Functions.Tests;

/// <summary>
/// A site that owns every entity and runs one transaction on the calling thread, delivering the messages its call
/// graph posts (calls, replies, returned credit, continuations) in a seeded random order instead of arrival order.
/// </summary>
/// <remarks>
/// The random pump runs inside <see cref="ExecutionSite.RunLoop"/>, started by the one message put on the base queue:
/// so the site's thread and synchronization context are the ones <see cref="ExecutionSite.CheckThread"/> and the
/// entities' awaits expect, with nothing in src changed for the test.
/// </remarks>
internal sealed class RandomOrderSite(EntityRegistry registry, int maxCallDepth, int seed) : ExecutionSite(registry, maxCallDepth)
{
    private readonly List<SiteMessage> _pending = [];
    private readonly Random _random = new(seed);
    private TxLocal? _local;

    /// <summary>How many times <see cref="ExecutionSite.OnTransactionComplete"/> was called.</summary>
    public int Completions { get; private set; }

    /// <summary>Called on completion, before <see cref="Run"/> returns: where a test checks what must hold at that moment.</summary>
    public Action<TxRun>? OnComplete { get; set; }

    /// <summary>The transaction's slots: what it read and wrote, per entity.</summary>
    public IReadOnlyDictionary<EntityAddress, KeySlot> Slots => _local?.Slots ?? [];

    public override ExecutionSite SiteOf(EntityAddress address) => this;

    public override KeySlot SlotFor(Invocation invocation) => _local!.Slot(invocation.Target);

    public override void OnInvoke(Invocation invocation) => invocation.Start(this);

    /// <summary>Every message the call graph posts waits here for the random pump.</summary>
    public override void Post(SiteMessage message)
    {
        if (!OnSiteThread)
        {
            throw new InvalidOperationException($"A message was posted from thread {Environment.CurrentManagedThreadId}, not the site's.");
        }

        _pending.Add(message);
    }

    /// <summary>Runs <paramref name="request"/> until no message is left; returns its run (ledger, signals, root result).</summary>
    public TxRun Run(TransactionRequest request)
    {
        var tx = new TxRun(request, tid: 1, epoch: 1, DateTimeOffset.UnixEpoch, seed: 1, RunMode.Serial);
        _local = new TxLocal(tx);
        bool drained = false;
        base.Post(new ContinuationMessage(
            _ =>
            {
                StartRoot(tx);
                Pump();
                drained = true;
            },
            null));
        RunLoop(() => drained);
        return tx;
    }

    protected override void OnTransactionComplete(TxRun tx)
    {
        Completions++;
        OnComplete?.Invoke(tx);
    }

    private void Pump()
    {
        while (_pending.Count > 0)
        {
            int i = _random.Next(_pending.Count);
            SiteMessage message = _pending[i];
            _pending[i] = _pending[^1];
            _pending.RemoveAt(_pending.Count - 1);
            Handle(message);
        }
    }
}
