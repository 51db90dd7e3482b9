using Dse.Samples.Shared;
using Dse.Samples.TwoPhaseCommit.Wire;
using Dse.Services;
using Grpc.Core;

namespace Dse.Samples.TwoPhaseCommit;

/// <summary>
/// The commit coordinator of textbook 2PC, as plain gRPC handlers on a speculative log: log start-of-commit, prepare
/// every participant in parallel, log the decision, deliver it to every participant, reply. The DSE interceptors make
/// each step speculative; the reply to the (non-speculative) client leaves only after a barrier.
/// </summary>
[BindServiceMethod(typeof(TwoPhaseCommitBindings), nameof(TwoPhaseCommitBindings.BindCommitter))]
internal sealed class CommitterService(SpeculativeLog log, DseClients<Participant.ParticipantClient> participants, InFlightCommits inFlight) : Committer.CommitterBase
{
    /// <inheritdoc />
    public override async Task<CommitReply> Commit(TransactionRequest request, ServerCallContext context)
    {
        context.GetHttpContext().Response.RegisterForDispose(inFlight.Enter());
        long transaction = request.Transaction;
        var clients = participants.Clients;
        new TransactionRecord(RecordKind.CommitStart, transaction, false).AppendTo(log);

        var votes = new Task<bool>[clients.Length];
        for (int i = 0; i < clients.Length; i++)
        {
            votes[i] = PrepareAsync(clients[i], transaction, context.CancellationToken);
        }

        bool commit = true;
        foreach (var vote in votes)
        {
            commit &= await vote;
        }

        new TransactionRecord(RecordKind.Decision, transaction, commit).AppendTo(log);
        var deliveries = new Task<bool>[clients.Length];
        for (int i = 0; i < clients.Length; i++)
        {
            deliveries[i] = DecideAsync(clients[i], transaction, commit, context.CancellationToken);
        }

        for (int i = 0; i < deliveries.Length; i++)
        {
            if (!await deliveries[i])
            {
                throw new RpcException(new Status(StatusCode.Unavailable, $"Transaction {transaction}: the decision ({(commit ? "commit" : "abort")}) could not be delivered to participant {i} within {Timeouts.Decide.TotalSeconds} s; its outcome at that participant is in doubt."));
            }
        }

        return new CommitReply { Committed = commit };
    }

    /// <inheritdoc />
    public override async Task<Ack> Quiesce(QuiesceRequest request, ServerCallContext context)
    {
        await inFlight.WhenIdleAsync(context.CancellationToken);
        return new Ack();
    }

    /// <summary>Phase one at one participant: its vote, or no if it cannot be reached in time.</summary>
    private static async Task<bool> PrepareAsync(Participant.ParticipantClient client, long transaction, CancellationToken cancellationToken)
    {
        try
        {
            var reply = await client.PrepareAsync(new TransactionRequest { Transaction = transaction }, deadline: DateTime.UtcNow + Timeouts.Prepare, cancellationToken: cancellationToken);
            return reply.Yes;
        }
        catch (RpcException)
        {
            return false;
        }
    }

    /// <summary>Phase two at one participant: retried until it is delivered or <see cref="Timeouts.Decide"/> passed.</summary>
    private static async Task<bool> DecideAsync(Participant.ParticipantClient client, long transaction, bool commit, CancellationToken cancellationToken)
    {
        var request = new DecideRequest { Transaction = transaction, Commit = commit };
        var giveUp = DateTime.UtcNow + Timeouts.Decide;
        var backoff = TimeSpan.FromMilliseconds(50);
        while (true)
        {
            try
            {
                var deadline = DateTime.UtcNow + Timeouts.DecideAttempt;
                await client.DecideAsync(request, deadline: deadline < giveUp ? deadline : giveUp, cancellationToken: cancellationToken);
                return true;
            }
            catch (RpcException) when (DateTime.UtcNow < giveUp && !cancellationToken.IsCancellationRequested)
            {
                // Down or restarting: a decision must reach every participant. (If the failure was a rollback of
                // this call's own state, DSE abandons the handler at the next await instead.)
                await Task.Delay(backoff, cancellationToken);
                backoff = TimeSpan.FromTicks(Math.Min(backoff.Ticks * 2, TimeSpan.FromMilliseconds(500).Ticks));
            }
            catch (RpcException)
            {
                return false;
            }
        }
    }
}
