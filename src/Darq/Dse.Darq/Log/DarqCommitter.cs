using System.Diagnostics;
using Dse.Storage;
using FASTER.core;

namespace Dse.Darq;

/// <summary>
/// Commits and truncation: the group commit loop, commits on request, the commit cookie (incarnation, deduplication table,
/// sequence bounds and, under general speculation, the version records) and truncation of the completed prefix.
/// </summary>
/// <remarks>
/// Invariant: a cookie is captured under the gate, where nothing is appended, so it describes exactly the tail FasterLog
/// commits with it. <see cref="_lastCommitTail"/> and <see cref="_lastCommitBegin"/> name the tail and begin address the
/// last issued commit covered; a commit that finds both unchanged issues nothing and waits for that one. Whatever
/// changes the cookie without appending (a retired producer, a version record) calls <see cref="MarkDirty"/>.
/// </remarks>
internal sealed class DarqCommitter
{
    private readonly DarqCore _core;
    private readonly DarqProducerTable _producers;
    private readonly DarqInbox _inbox;
    private readonly DarqOutbox _outbox;
    private readonly DarqTruncationMarks _marks;
    private readonly DarqVersions _versions;
    private readonly Action _committed;

    /// <summary>The tail and begin address of the last commit issued; under the gate.</summary>
    private long _lastCommitTail;

    private long _lastCommitBegin;

    private Task _loop = Task.CompletedTask;

    /// <summary>Creates the committer; <c>committed</c> is called after every commit it issues or waits for (it wakes delivery, the feed and a held processor).</summary>
    public DarqCommitter(DarqCore core, DarqProducerTable producers, DarqInbox inbox, DarqOutbox outbox, DarqTruncationMarks marks, DarqVersions versions,
        Action committed)
    {
        _core = core;
        _producers = producers;
        _inbox = inbox;
        _outbox = outbox;
        _marks = marks;
        _versions = versions;
        _committed = committed;
    }

    /// <summary>The group commit loop, once started; ends when the DARQ closes.</summary>
    public Task Loop => _loop;

    /// <summary>Starts the group commit, unless commits happen only on request (<see cref="DarqOptions.CommitInterval"/> infinite).</summary>
    public void Start()
    {
        if (_core.Options.CommitInterval != Timeout.InfiniteTimeSpan)
        {
            _loop = RunLoopAsync();
        }
    }

    /// <summary>The commit that recovery or a restore found or issued covers this tail and begin address; under the gate.</summary>
    public void CommittedAt(long tail, long begin)
    {
        _lastCommitTail = tail;
        _lastCommitBegin = begin;
    }

    /// <summary>Wakes what waits for commits (delivery, the feed, a held processor) without committing: new entries may be sendable.</summary>
    public void SignalCommitted() => _committed();

    /// <summary>The cookie changed without an append: the next commit must be issued even if the tail did not move. Under the gate.</summary>
    public void MarkDirty() => _lastCommitTail = -1;

    /// <summary>Commits the log up to its current tail, with the DARQ state, and waits until that commit is durable.</summary>
    /// <exception cref="IOException">Commit-record writes to the commit device keep failing.</exception>
    public async ValueTask CommitAsync(CancellationToken cancellationToken)
    {
        var log = _core.Log;
        ValueTask<(bool, long, long)> pending;
        long waitFor;
        long started;
        await _core.Gate.WaitAsync(cancellationToken).ConfigureAwait(false);
        try
        {
            RetireIdleProducers();
            long tail = log.TailAddress;
            long begin = log.BeginAddress;
            if (tail == _lastCommitTail && begin == _lastCommitBegin)
            {
                pending = default;
                waitFor = tail;
                started = 0;
            }
            else
            {
                // Under the gate nothing is appended, so the cookie describes exactly the tail FasterLog commits.
                var cookie = SerializeCookie();
                started = Stopwatch.GetTimestamp();
                pending = log.CommitStronglyAsync(cookie, -1, CancellationToken.None);
                _lastCommitTail = tail;
                _lastCommitBegin = begin;
                waitFor = tail;
            }
        }
        finally
        {
            _core.Gate.Release();
        }

        try
        {
            if (started != 0)
            {
                await _core.UntilCommitFailureAsync(AsValueTask(pending)).ConfigureAwait(false);
                if (DarqInstrumentation.CommitLatency.Enabled)
                {
                    DarqInstrumentation.CommitLatency.Record(Stopwatch.GetElapsedTime(started).TotalMilliseconds, _core.Tag);
                }
            }

            await _core.WaitForCommitAsync(waitFor, cancellationToken).ConfigureAwait(false);
            _committed();
        }
        catch (Exception e) when (e is IOException or CommitFailureException or InvalidOperationException)
        {
            // The commit may not have happened: the next commit request must issue a commit rather than take the
            // "nothing changed" path and wait for this one.
            await _core.Gate.WaitAsync(CancellationToken.None).ConfigureAwait(false);
            try
            {
                MarkDirty();
            }
            finally
            {
                _core.Gate.Release();
            }

            throw;
        }

        static async ValueTask AsValueTask(ValueTask<(bool, long, long)> commit) => await commit.ConfigureAwait(false);
    }

    /// <summary>
    /// Under the gate: issues a commit whose cookie is the state as it is now, even when the tail has not moved since the
    /// last commit (a new version record, a retired producer), and returns it with the tail it covers.
    /// </summary>
    public IssuedCommit IssueUnderGate()
    {
        long tail = _core.Log.TailAddress;
        var pending = _core.Log.CommitStronglyAsync(SerializeCookie(), -1, CancellationToken.None);
        _lastCommitTail = tail;
        _lastCommitBegin = _core.Log.BeginAddress;
        return new IssuedCommit(pending, tail);
    }

    /// <summary>Waits for that very commit (<paramref name="what"/> names it in the error), then for the log to be durable up to its tail.</summary>
    /// <exception cref="IOException">FasterLog refused the commit, or commit-record writes keep failing.</exception>
    public async ValueTask AwaitIssuedAsync(IssuedCommit commit, string what, CancellationToken cancellationToken)
    {
        await _core.UntilCommitFailureAsync(CheckedAsync(commit.Pending, _core.Name, what)).ConfigureAwait(false);
        await _core.WaitForCommitAsync(commit.Tail, cancellationToken).ConfigureAwait(false);

        static async ValueTask CheckedAsync(ValueTask<(bool Success, long Tail, long CommitNum)> pending, string name, string what)
        {
            if (!(await pending.ConfigureAwait(false)).Success)
            {
                throw new IOException($"DARQ '{name}': FasterLog refused the commit {what}.");
            }
        }
    }

    /// <summary>
    /// Waits until the entry ending at <paramref name="address"/> is committed: waiting for the group commit, or committing
    /// when there is none.
    /// </summary>
    public ValueTask EnsureCommittedAsync(long address, CancellationToken cancellationToken)
    {
        if (_core.Log.CommittedUntilAddress >= address)
        {
            return ValueTask.CompletedTask;
        }

        return _core.Options.CommitInterval == Timeout.InfiniteTimeSpan ? CommitAsync(cancellationToken) : _core.WaitForCommitAsync(address, cancellationToken);
    }

    /// <summary>
    /// Removes a producer the table holds with <paramref name="seen"/>, without the closed and fenced checks (the idle
    /// sweep runs inside a commit, the final one of a close included); under the gate.
    /// </summary>
    public void RemoveProducer(long producerId, long seen)
    {
        _producers.Remove(producerId);

        // Nothing was appended: a commit that would find the tail unchanged must still carry the new table.
        MarkDirty();
        DarqInstrumentation.ProducersRetired.Add(1, _core.Tag);
        DarqLogMessages.ProducerRetired(_core.Logger, _core.Name, producerId, seen, _producers.Count);
    }

    /// <summary>
    /// Truncates the completed prefix; <paramref name="background"/> (the commit loop): only as far as log memory no
    /// longer holds it (<see cref="DarqTruncationMarks"/>).
    /// </summary>
    /// <returns>The begin address after the truncation.</returns>
    public async ValueTask<long> TruncateAsync(bool background, CancellationToken cancellationToken)
    {
        var log = _core.Log;
        await _core.Gate.WaitAsync(cancellationToken).ConfigureAwait(false);
        try
        {
            _core.ThrowIfClosed();
            var start = _versions.LimitTruncation(CompletedPrefixStart());
            if (background)
            {
                if (_marks.BackgroundPoint(start, log.TailAddress) is not { } point)
                {
                    return log.BeginAddress;
                }

                start = point;
            }

            long until = start.Lsn;
            if (until > log.BeginAddress)
            {
                log.TruncateUntil(until);
                _core.BeginSequence = start.Sequence;
                _inbox.ForgetConsumedBelow(until);
                _marks.ForgetBelow(until);
                DarqLogMessages.Truncated(_core.Logger, _core.Name, until);
            }

            return log.BeginAddress;
        }
        finally
        {
            _core.Gate.Release();
        }
    }

    /// <summary>
    /// Where the completed prefix of the log ends now: the start of the step holding the oldest unconsumed message or
    /// unacknowledged OUT message, or the tail when none is. Steps are contiguous, so the oldest pending entry's step
    /// starts before every other pending entry's, and a cut there never splits a step (recovery checks each completion
    /// against all SELF/OUT entries of its step). Under the gate.
    /// </summary>
    public StepStart CompletedPrefixStart()
    {
        var start = new StepStart(_core.Log.TailAddress, _core.NextSequence);
        foreach (var message in _inbox.Messages.Values)
        {
            start = message.Step;
            break;
        }

        foreach (var pending in _outbox.Messages.Values)
        {
            if (pending.Step.Lsn < start.Lsn)
            {
                start = pending.Step;
            }

            break;
        }

        return start;
    }

    /// <summary>
    /// The cookie of a new commit; under the gate. Refused before FasterLog sees it when it would not fit the commit
    /// records: FasterLog's commit worker would fail on it, and on every commit after it.
    /// </summary>
    /// <param name="check">Whether to refuse a cookie beyond the room (a restore, which only shrinks the state, does not).</param>
    /// <exception cref="InvalidOperationException">The state outgrew the commit records' room.</exception>
    public byte[] SerializeCookie(bool check = true)
    {
        var cookie = new DarqCommitState
        {
            General = _core.Options.Speculation == DarqSpeculationMode.General,
            Incarnation = _core.Incarnation,
            NextSequence = _core.NextSequence,
            BeginSequence = _core.BeginSequence,
            Producers = _producers.Entries,
            Voided = _versions.Voided,
            Versions = _versions.Records,
        }.Serialize();
        int limit = DarqCommitState.MaxSize(_core.Options.MaxProducers) + DarqCommitState.SpeculationRoom;
        if (check && cookie.Length > limit)
        {
            throw new InvalidOperationException(
                $"DARQ '{_core.Name}': the commit state takes {cookie.Length} bytes, more than the {limit} its commit records hold: " +
                $"{_versions.Records.Count} versions the coordinator has not committed keep their deduplication undo tables " +
                "(general speculation). Commits resume once the coordinator commits and those versions are pruned.");
        }

        return cookie;
    }

    /// <summary>
    /// Before a commit, under the gate: retires every producer silent for <see cref="DarqOptions.RetireIdleProducersAfter"/>,
    /// so that the commit carries the smaller table.
    /// </summary>
    private void RetireIdleProducers()
    {
        if (_producers.FindIdle() is not { } silent)
        {
            return;
        }

        var idle = _core.Options.RetireIdleProducersAfter!.Value;
        foreach (var (producer, sequence, elapsed) in silent)
        {
            DarqLogMessages.IdleProducerRetiring(_core.Logger, _core.Name, producer, elapsed, idle);
            RemoveProducer(producer, sequence);
        }
    }

    private async Task RunLoopAsync()
    {
        var options = _core.Options;
        using var timer = new PeriodicTimer(options.CommitInterval, options.TimeProvider);
        var token = _core.Stopping;
        while (await timer.WaitForNextTickAsync(token).ConfigureAwait(false))
        {
            try
            {
                if (options.AutoTruncate)
                {
                    await TruncateAsync(background: true, token).ConfigureAwait(false);
                }

                await CommitAsync(token).ConfigureAwait(false);
            }
            catch (OperationCanceledException) when (token.IsCancellationRequested)
            {
                return;
            }
            catch (ObjectDisposedException) when (_core.IsClosed)
            {
                return;
            }
            catch (Exception e) when (e is StorageFencedException || _core.FencedException() is not null)
            {
                // Another instance owns the storage: committing again can never succeed.
                DarqLogMessages.CommitLoopFenced(_core.Logger, e, _core.Name);
                return;
            }
            catch (Exception e) when (e is IOException or CommitFailureException or InvalidOperationException)
            {
                DarqLogMessages.CommitFailed(_core.Logger, e, _core.Name);
            }
#pragma warning disable CA1031 // The loop is the DARQ's only group commit: an unexpected error must not end it silently.
            catch (Exception e)
#pragma warning restore CA1031
            {
                DarqLogMessages.CommitLoopError(_core.Logger, e, _core.Name);
            }
        }
    }
}
