namespace Dse.Darq;

/// <summary>
/// Speculation off or intra-participant: operations run directly under the DARQ's gate, durability is the log's commit,
/// and OUT messages leave once committed, many batches in flight per destination. Off differs only in that the processor
/// is handed IN messages once committed (the processor holds the others back).
/// </summary>
internal sealed class LocalSpeculation(DarqParts parts) : DarqSpeculation(parts)
{
    public override long DeliverableBelow => Parts.Core.Log.CommittedUntilAddress;

    public override int DeliveryBatchSize => Parts.Core.Options.DeliveryBatchSize;

    public override int DeliveryWindow => Parts.Core.Options.DeliveryWindow;

    public override ValueTask<DarqEnqueueResult> EnqueueAsync(ReadOnlyMemory<byte> payload, long producerId, long sequenceNumber, bool dedup, bool contiguous,
        CancellationToken cancellationToken)
        => Parts.Intake.EnqueueAsync(payload, producerId, sequenceNumber, dedup, contiguous, cancellationToken);

    // Never checked for gaps (ContiguousProducerSequences): source LSNs have them.
    public override ValueTask<DarqEnqueueResult> ReceiveAsync(DarqDelivery delivery, CancellationToken cancellationToken)
        => Parts.Intake.EnqueueAsync(delivery.Payload, Darq.SourceProducerId(delivery.Source), delivery.SourceLsn, dedup: true, contiguous: false, cancellationToken);

    public override async ValueTask<ReadOnlyMemory<byte>> ReceiveSpeculativeAsync(DarqDelivery delivery, CancellationToken cancellationToken)
    {
        await ReceiveDurablyAsync(delivery, cancellationToken).ConfigureAwait(false);
        return ReadOnlyMemory<byte>.Empty;
    }

    public override ValueTask<DarqProcessor> RegisterAsync(Darq darq, CancellationToken cancellationToken) => Parts.Stepper.RegisterAsync(darq, cancellationToken);

    public override ValueTask<DarqStepResult> StepAsync(long incarnation, DarqStep step, CancellationToken cancellationToken)
    {
        long only = step.OnlyConsumed;
        if (only >= 0 && !cancellationToken.IsCancellationRequested)
        {
            long address = Parts.Stepper.TryConsumeOne(incarnation, only);
            if (address >= 0)
            {
                return new ValueTask<DarqStepResult>(DarqStepper.ConsumingOneResult(address));
            }
        }

        return Parts.Stepper.StepAsync(incarnation, step, cancellationToken);
    }

    public override ValueTask<DarqConsumeResult> ConsumeAsync(long incarnation, long lsn, CancellationToken cancellationToken)
    {
        long address = cancellationToken.IsCancellationRequested ? -1 : Parts.Stepper.TryConsumeOne(incarnation, lsn);
        return address >= 0 ? new ValueTask<DarqConsumeResult>(new DarqConsumeResult(address)) : ConsumeSlowAsync(incarnation, lsn, cancellationToken);
    }

    public override ValueTask<IReadOnlyList<DarqStepResult>> StepBatchAsync(long incarnation, IReadOnlyList<DarqStep> steps, CancellationToken cancellationToken)
        => Parts.Batcher.StepBatchAsync(incarnation, steps, cancellationToken);

    public override ValueTask<DarqCheckpointResult> CheckpointAsync(long incarnation, IReadOnlyList<long>? replace, IReadOnlyList<ReadOnlyMemory<byte>>? payloads,
        DarqSnapshot? snapshot, CancellationToken cancellationToken)
        => Parts.Checkpointer.CheckpointAsync(incarnation, replace, payloads, snapshot, cancellationToken);

    public override ValueTask<long> DiscardAsync(long outLsn, CancellationToken cancellationToken) => Parts.Acknowledger.DiscardAsync(outLsn, cancellationToken);

    public override ValueTask<bool> RetireProducerAsync(long producerId, CancellationToken cancellationToken)
        => Parts.Intake.RetireAndCommitAsync(producerId, cancellationToken);

    public override ValueTask WaitForRecoverableAsync(long address, CancellationToken cancellationToken) => Parts.Core.WaitForCommitAsync(address, cancellationToken);

    public override ValueTask EnsureDurableAsync(long address, CancellationToken cancellationToken) => Parts.Committer.EnsureCommittedAsync(address, cancellationToken);

    public override async ValueTask<SendOutcome> SendAsync(IDarqDestination destination, KeyValuePair<long, PendingOut>[] run, long collectedAtRebuild,
        CancellationToken cancellationToken)
    {
        var sent = await destination.SendBatchAsync(Deliveries(run), cancellationToken).ConfigureAwait(false);
        return SendOutcome.Sent(sent);
    }

    public override async ValueTask<bool> AcknowledgeAsync(long[] lsns, ReadOnlyMemory<byte> replyHeader, CancellationToken cancellationToken)
    {
        await Parts.Acknowledger.AcknowledgeAsync(lsns, cancellationToken).ConfigureAwait(false);
        return true;
    }

    /// <summary>
    /// A consume-only step off the fast path (gate taken, log full, or a step to refuse): the general path, entered past
    /// the fast path this call has just tried.
    /// </summary>
    private async ValueTask<DarqConsumeResult> ConsumeSlowAsync(long incarnation, long lsn, CancellationToken cancellationToken)
    {
        var result = await Parts.Stepper.StepAsync(incarnation, new DarqStep().Consume(lsn), cancellationToken).ConfigureAwait(false);
        return new DarqConsumeResult(result.CompletionLsn);
    }
}
