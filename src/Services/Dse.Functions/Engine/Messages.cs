namespace Dse.Functions.Engine;

/// <summary>Work for one site, handled on its thread in arrival order (each sender's messages stay in its order).</summary>
internal abstract class SiteMessage
{
    /// <summary>The epoch the message belongs to, and whether it may only run in that epoch's fallback phase.</summary>
    public virtual (long Epoch, SiteStage Stage) Requires => (0, SiteStage.Any);

    public abstract void Handle(ExecutionSite site);
}

/// <summary>The protocol stage a message needs its site to have reached before it runs; earlier ones wait.</summary>
internal enum SiteStage
{
    /// <summary>Runs whenever it arrives.</summary>
    Any,

    /// <summary>Once the site has started the epoch.</summary>
    Executing,

    /// <summary>Once the site is in the epoch's fallback phase.</summary>
    Fallback,

    /// <summary>Once the site has ended the epoch.</summary>
    Done,
}

/// <summary>Start a call on the site that owns its entity.</summary>
internal sealed class InvokeMessage(Invocation invocation) : SiteMessage
{
    public Invocation Invocation { get; } = invocation;

    public override (long Epoch, SiteStage Stage) Requires =>
        (Invocation.Tx.Epoch, Invocation.Tx.Mode == RunMode.Fallback ? SiteStage.Fallback : SiteStage.Executing);

    public override void Handle(ExecutionSite site) => site.OnInvoke(Invocation);
}

/// <summary>An awaited call's reply, to its caller's site.</summary>
internal sealed class ReplyMessage(Invocation parent, int index, byte[] result, EntityAbort? failure, UInt128 credit, TxSignals signals) : SiteMessage
{
    public override void Handle(ExecutionSite site) => parent.OnChildReply(index, result, failure, credit, signals);
}

/// <summary>Credit returned to the root's site by a call with no caller to reply to (a one-way call).</summary>
internal sealed class CreditMessage(TxRun tx, UInt128 credit, TxSignals signals) : SiteMessage
{
    public override void Handle(ExecutionSite site) => site.OnCredit(tx, credit, signals, rootResult: null);
}

/// <summary>A continuation posted to the site's synchronization context.</summary>
internal sealed class ContinuationMessage(SendOrPostCallback callback, object? state) : SiteMessage
{
    public override void Handle(ExecutionSite site) => callback(state);
}

/// <summary>Which of an epoch's three synchronizations a <see cref="SyncMessage"/> is.</summary>
internal enum SyncKind
{
    /// <summary>A partition's roots are complete; the TIDs are its logic aborts.</summary>
    Sync1,

    /// <summary>A partition ran Aria's rule; the TIDs are its concurrency aborts.</summary>
    Sync2,

    /// <summary>A partition's fallback is over; the TIDs move to the next epoch.</summary>
    Sync3,
}

/// <summary>One partition's part of an epoch's synchronization, to every partition (itself included).</summary>
internal sealed class SyncMessage(SyncKind kind, long epoch, long[] tids) : SiteMessage
{
    public SyncKind Kind { get; } = kind;

    public long Epoch { get; } = epoch;

    public long[] Tids { get; } = tids;

    public override (long Epoch, SiteStage Stage) Requires =>
        (Epoch, Kind == SyncKind.Sync3 ? SiteStage.Fallback : SiteStage.Executing);

    public override void Handle(ExecutionSite site) => ((Partition)site).OnSync(this);
}

/// <summary>A fallback transaction is over: apply its writes here (when it committed) and let the ones waiting for it go.</summary>
internal sealed class UnlockMessage(long epoch, long tid, bool commit) : SiteMessage
{
    public override (long Epoch, SiteStage Stage) Requires => (epoch, SiteStage.Fallback);

    public override void Handle(ExecutionSite site) => ((Partition)site).OnUnlock(tid, commit);
}

/// <summary>The sequencer's record of the next epoch.</summary>
internal sealed class RecordMessage(EpochRecord record) : SiteMessage
{
    public override (long Epoch, SiteStage Stage) Requires => (record.Epoch - 1, SiteStage.Done);

    public override void Handle(ExecutionSite site) => ((Partition)site).BeginEpoch(record);
}
