using Dse.Samples.TwoPhaseCommit.Wire;
using Dse.Services;
using Grpc.Core;

namespace Dse.Samples.TwoPhaseCommit;

/// <summary>
/// A 2PC participant. Plain gRPC handlers: the DSE server interceptor runs each synchronous segment as an action on
/// the participant's speculative log, so each record is appended speculatively and a reply carries the log's version.
/// </summary>
[BindServiceMethod(typeof(TwoPhaseCommitBindings), nameof(TwoPhaseCommitBindings.BindParticipant))]
internal sealed class ParticipantService(SpeculativeLog log, ParticipantIndex index) : Participant.ParticipantBase
{
    /// <inheritdoc />
    public override async Task<Ack> Begin(TransactionRequest request, ServerCallContext context)
    {
        await index.Ready;
        long lsn = new TransactionRecord(RecordKind.Start, request.Transaction, false).AppendTo(log);
        index.AddStart(request.Transaction, lsn);
        return new Ack();
    }

    /// <inheritdoc />
    public override async Task<VoteReply> Prepare(TransactionRequest request, ServerCallContext context)
    {
        await index.Ready;
        bool yes = false;
        if (index.TryGetStart(request.Transaction, out long lsn))
        {
            try
            {
                await log.ReadAsync(lsn, context.CancellationToken);
                yes = true;
            }
            catch (ArgumentOutOfRangeException)
            {
                // The start record was rolled back (lost in a crash, or it depended on lost state): vote no.
            }
        }

        new TransactionRecord(RecordKind.Vote, request.Transaction, yes).AppendTo(log);
        return new VoteReply { Yes = yes };
    }

    /// <inheritdoc />
    public override async Task<Ack> Decide(DecideRequest request, ServerCallContext context)
    {
        await index.Ready;
        new TransactionRecord(RecordKind.Decision, request.Transaction, request.Commit).AppendTo(log);
        return new Ack();
    }

    /// <inheritdoc />
    public override async Task<OutcomesReply> Outcomes(OutcomesRequest request, ServerCallContext context)
    {
        await index.Ready;
        var byTransaction = new Dictionary<long, TransactionOutcome>();
        await TransactionLog.ForEachAsync(log, (_, record) =>
        {
            if (!byTransaction.TryGetValue(record.Transaction, out var outcome))
            {
                byTransaction[record.Transaction] = outcome = new TransactionOutcome { Transaction = record.Transaction };
            }

            switch (record.Kind)
            {
                case RecordKind.Start:
                    outcome.Started = true;
                    break;
                case RecordKind.Vote:
                    outcome.Vote = record.Value ? 1 : 2;
                    break;
                case RecordKind.Decision when record.Value:
                    outcome.Commits++;
                    break;
                case RecordKind.Decision:
                    outcome.Aborts++;
                    break;
            }
        }, context.CancellationToken);

        var reply = new OutcomesReply();
        reply.Transactions.AddRange(byTransaction.Values);
        return reply;
    }
}
