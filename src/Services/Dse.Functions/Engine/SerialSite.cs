namespace Dse.Functions.Engine;

/// <summary>
/// One site that owns every entity and runs one transaction at a time on the calling thread, applying its writes when
/// it ends without an abort. The calls, their order, their credit and their checks are the runtime's own
/// (<see cref="Invocation"/>); only the epochs, partitions and conflict checks are absent.
/// </summary>
internal sealed class SerialSite(EntityRegistry registry, int maxCallDepth) : ExecutionSite(registry, maxCallDepth)
{
    private readonly object _gate = new();
    private TxLocal? _current;
    private bool _done;

    public override ExecutionSite SiteOf(EntityAddress address) => this;

    public override KeySlot SlotFor(Invocation invocation) => _current!.Slot(invocation.Target);

    public override void OnInvoke(Invocation invocation) => invocation.Start(this);

    /// <summary>Runs <paramref name="request"/> alone to its outcome; its writes are applied when it commits.</summary>
    public TransactionOutcome Run(TransactionRequest request, long tid, long epoch, DateTimeOffset timestamp, ulong seed, TransactionPhase committedPhase)
    {
        lock (_gate)
        {
            var tx = new TxRun(request, tid, epoch, timestamp, seed, RunMode.Serial);
            _current = new TxLocal(tx);
            _done = false;
            Post(new ContinuationMessage(_ => StartRoot(tx), null));
            RunLoop(() => _done);

            EntityAbort? abort = tx.Signals.Abort;
            if (abort is null)
            {
                foreach (KeySlot slot in _current.Slots.Values)
                {
                    if (slot.Written)
                    {
                        Committed[slot.Address] = slot.Value;
                    }
                }
            }

            _current = null;
            return abort is null
                ? new TransactionOutcome(request.RequestId, tid, epoch, committedPhase, tx.RootResult ?? WireFormat.Empty, null)
                : new TransactionOutcome(request.RequestId, tid, epoch, TransactionPhase.OptimisticLogicAbort, WireFormat.Empty, abort);
        }
    }

    protected override void OnTransactionComplete(TxRun tx) => _done = true;
}
