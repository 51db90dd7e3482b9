using System.Diagnostics;
using System.Globalization;
using Dse.Grpc;
using Dse.Samples.Shared;
using Dse.Samples.TwoPhaseCommit.Wire;
using Grpc.Core;
using Grpc.Net.Client;

namespace Dse.Samples.TwoPhaseCommit;

/// <summary>
/// Closed-loop 2PC clients. Each transaction: write the start record at every participant speculatively (with a DSE
/// header, so each participant replies at once), then ask the committer to commit it as a plain, non-speculative
/// caller (its reply comes after a barrier). A call rolled back by a failure (ABORTED) aborts the transaction; any
/// other failure (a participant down, a deadline) counts as failed; either way the client moves on.
/// </summary>
internal sealed class LoadGenerator : IDisposable
{
    // After a failed transaction a client waits before the next, doubling up to a second while failures go on, so a
    // participant that is down for a few seconds does not make the clients burn through their transactions.
    private static readonly TimeSpan FirstBackoff = TimeSpan.FromMilliseconds(50);
    private static readonly TimeSpan MaxBackoff = TimeSpan.FromSeconds(1);

    private readonly GrpcChannel[] _participantChannels;
    private readonly Participant.ParticipantClient[] _participants;
    private readonly GrpcChannel _committerChannel;
    private readonly Committer.CommitterClient _committer;

    // The highest world-line seen in replies: start-record calls are sent in it.
    private long _worldLine;

    public LoadGenerator(LocalCluster cluster)
    {
        _participantChannels = cluster.ParticipantAddresses.Select(a => Channels.Create(a, cluster.CertificateAuthority)).ToArray();
        _participants = _participantChannels.Select(c => new Participant.ParticipantClient(c)).ToArray();
        _committerChannel = Channels.Create(cluster.CommitterAddress, cluster.CertificateAuthority);
        _committer = new Committer.CommitterClient(_committerChannel);
    }

    /// <summary>The committer's client (plain: calls carry no DSE header).</summary>
    public Committer.CommitterClient Committer => _committer;

    /// <summary>The participants' clients (plain).</summary>
    public IReadOnlyList<Participant.ParticipantClient> Participants => _participants;

    /// <summary>
    /// Runs transactions <paramref name="firstId"/> .. <paramref name="firstId"/> + <paramref name="count"/> - 1 from
    /// <paramref name="clients"/> closed-loop clients. <paramref name="onFinished"/> is called with the number of
    /// transactions finished so far after each one (chaos hooks in there).
    /// </summary>
    public async Task<LoadOutcome> RunAsync(long firstId, int count, int clients, Action<int>? onFinished, CancellationToken cancellationToken)
    {
        var outcome = new LoadOutcome();
        long next = firstId - 1;
        long last = firstId + count - 1;
        int finished = 0;
        var started = Stopwatch.GetTimestamp();

        async Task ClientAsync()
        {
            var backoff = FirstBackoff;
            while (true)
            {
                long transaction = Interlocked.Increment(ref next);
                if (transaction > last)
                {
                    return;
                }

                long begin = Stopwatch.GetTimestamp();
                var (result, reason) = await RunOneAsync(transaction, cancellationToken).ConfigureAwait(false);
                outcome.Record(transaction, result, reason, begin, Stopwatch.GetElapsedTime(begin).TotalMilliseconds);
                if (result == TransactionResult.Committed)
                {
                    backoff = FirstBackoff;
                }
                else
                {
                    await Task.Delay(backoff, cancellationToken).ConfigureAwait(false);
                    backoff = TimeSpan.FromTicks(Math.Min(backoff.Ticks * 2, MaxBackoff.Ticks));
                }

                onFinished?.Invoke(Interlocked.Increment(ref finished));
            }
        }

        var tasks = new Task[clients];
        for (int i = 0; i < clients; i++)
        {
            tasks[i] = Task.Run(ClientAsync, cancellationToken);
        }

        await Task.WhenAll(tasks).ConfigureAwait(false);
        outcome.Elapsed = Stopwatch.GetElapsedTime(started);
        return outcome;
    }

    /// <inheritdoc />
    public void Dispose()
    {
        foreach (var channel in _participantChannels)
        {
            channel.Dispose();
        }

        _committerChannel.Dispose();
    }

    /// <summary>Runs one transaction; for one not committed, also why (the step and the status).</summary>
    private async Task<(TransactionResult Result, string? Reason)> RunOneAsync(long transaction, CancellationToken cancellationToken)
    {
        var request = new TransactionRequest { Transaction = transaction };
        var begins = new Task[_participants.Length];
        for (int i = 0; i < begins.Length; i++)
        {
            begins[i] = BeginAsync(_participants[i], request, cancellationToken);
        }

        await Task.WhenAll(begins).ConfigureAwait(ConfigureAwaitOptions.SuppressThrowing);

        // A call cancelled with the run fails as CANCELLED: report the run's cancellation, not a failed transaction.
        cancellationToken.ThrowIfCancellationRequested();
        var failure = Classify(begins);
        if (failure is { } beginFailure)
        {
            return beginFailure;
        }

        try
        {
            var reply = await _committer.CommitAsync(request, deadline: DateTime.UtcNow + Timeouts.Commit, cancellationToken: cancellationToken).ConfigureAwait(false);
            return reply.Committed ? (TransactionResult.Committed, null) : (TransactionResult.Aborted, "a participant voted no");
        }
        catch (RpcException) when (cancellationToken.IsCancellationRequested)
        {
            throw new OperationCanceledException(cancellationToken);
        }
        catch (RpcException ex)
        {
            ObserveRollback(ex.Trailers);
            return (ex.StatusCode == StatusCode.Aborted ? TransactionResult.Aborted : TransactionResult.Failed, $"commit: {ex.StatusCode}");
        }
    }

    /// <summary>One start record, sent speculatively in the latest world-line seen, with no dependencies.</summary>
    private async Task BeginAsync(Participant.ParticipantClient participant, TransactionRequest request, CancellationToken cancellationToken)
    {
        var headers = new Metadata();
        DseMetadata.SetHeader(headers, Dse.DseHeader.FromDependencies(Volatile.Read(ref _worldLine), []));
        using var call = participant.BeginAsync(request, headers, DateTime.UtcNow + Timeouts.Begin, cancellationToken);
        try
        {
            await call.ResponseAsync.ConfigureAwait(false);
        }
        catch (RpcException ex)
        {
            ObserveRollback(ex.Trailers);
            throw;
        }

        if (DseMetadata.TryGetHeader(call.GetTrailers(), out var header))
        {
            RaiseWorldLine(header.WorldLine);
        }
    }

    private static (TransactionResult, string)? Classify(Task[] calls)
    {
        (TransactionResult, string)? result = null;
        foreach (var call in calls)
        {
            if (call.Exception?.InnerException is RpcException { StatusCode: StatusCode.Aborted })
            {
                return (TransactionResult.Aborted, "start record: Aborted");
            }

            if (call.IsFaulted || call.IsCanceled)
            {
                if (call.Exception?.InnerException is not RpcException failed)
                {
                    // Not a call failure (a bug, or cancellation of the run): surface it.
                    call.GetAwaiter().GetResult();
                    throw new InvalidOperationException("Unreachable: the call faulted.");
                }

                result = (TransactionResult.Failed, $"start record: {failed.StatusCode}");
            }
        }

        return result;
    }

    private void ObserveRollback(Metadata trailers)
    {
        if (trailers.GetValue(DseMetadata.RolledBackKey) is { } value && long.TryParse(value, NumberStyles.None, CultureInfo.InvariantCulture, out long worldLine))
        {
            RaiseWorldLine(worldLine);
        }
    }

    private void RaiseWorldLine(long worldLine)
    {
        long seen = Volatile.Read(ref _worldLine);
        while (worldLine > seen)
        {
            long previous = Interlocked.CompareExchange(ref _worldLine, worldLine, seen);
            if (previous == seen)
            {
                return;
            }

            seen = previous;
        }
    }
}
