using System.Diagnostics;

namespace Dse.Darq;

/// <summary>
/// General speculation: backpressure, so that a coordinator committing more slowly than versions advance never overflows
/// the speculation section of the commit record (and so never faults the StateObject).
/// </summary>
/// <remarks>
/// <para>Every persisted, unpruned version keeps a record (with its deduplication undo table) in the commit cookie, which
/// has <see cref="DarqCommitState.SpeculationRoom"/> bytes for them. What makes the section grow is a Persist (one record)
/// and a producer change (an undo entry in each record that lacks the producer); only Prune and Restore shrink it.</para>
/// <para>The design holds back new <em>actions</em>, not Persist: LibDse calls Persist and Prune synchronously (Persist
/// with every action excluded), so neither may wait, least of all for the other; and LibDse's periodic advance persists a
/// version only when an action dirtied it. So while <see cref="DarqOptions.MaxUncommittedVersions"/> versions are
/// uncommitted, or the section is at <see cref="DarqOptions.MaxSpeculationBytes"/>, every action (enqueue, receive, step,
/// registration, checkpoint, acknowledgement, the barrier's local action) waits before it starts, outside the LibDse
/// action and outside the DARQ's gate. The version under way is still persisted (it is dirty), then no version follows
/// until Prune frees room. A wait never blocks Persist, Prune or a version advance, so it cannot deadlock them; it ends
/// on a prune or restore (or on a view change, a fault or disposal, to re-check), and by its caller's token.</para>
/// <para>A hold needs at least one uncommitted version: that is what a commit will prune. With none, nothing would ever
/// persist again (every action held, nothing dirty) and the hold would never end.</para>
/// <para>Actions already under way when the hold starts are not held; their producer changes are the one growth that
/// could still outrun the headroom (a new producer adds an entry to every record). That is checked exactly under the gate
/// before anything is appended (<see cref="DarqVersions.EnsureUndoRoom"/>): a change that would leave less than
/// <see cref="DarqCommitState.RecordReserve"/> free ends its action, waits for room and starts over. The reserve is left
/// for the records persisted after the hold starts.</para>
/// <para>Counts are written under the DARQ's gate and read with volatile reads.</para>
/// </remarks>
internal sealed class DarqPacing
{
    /// <summary>How often the start of a hold is logged as a warning at most; shorter episodes in between go to debug.</summary>
    private static readonly TimeSpan HoldWarningInterval = TimeSpan.FromSeconds(30);

    private readonly DarqCore _core;

    /// <summary>The StateObject whose committed version the counts are taken against (general speculation only).</summary>
    private StateObject? _dse;

    /// <summary>The bytes the speculation section of the next cookie takes.</summary>
    private int _bytes;

    /// <summary>Persisted versions the coordinator has not committed (records after the committed one).</summary>
    private int _uncommitted;

    /// <summary>The committed version (as last heard) <see cref="_uncommitted"/> was counted against; read without the gate.</summary>
    private long _countedAgainst;

    /// <summary>1 while new actions wait (backpressure).</summary>
    private int _held;

    /// <summary>Completed (and replaced) when room may have been freed: a prune, a restore, the end of a hold.</summary>
    private TaskCompletionSource _roomFreed = NewRoomSignal();

    /// <summary>The current hold episode: when it started, whether its start was a warning, the actions that waited in it.</summary>
    private long _holdStarted;

    private bool _holdWarned;
    private int _heldInEpisode;

    /// <summary>When the last start was logged as a warning, and the episodes logged at debug since.</summary>
    private long _lastHoldWarning;

    private int _quietEpisodes;

    public DarqPacing(DarqCore core)
    {
        _core = core;
    }

    /// <summary>Whether new actions wait (backpressure).</summary>
    public bool IsHeld => Volatile.Read(ref _held) != 0;

    /// <summary>The persisted versions the coordinator has not committed yet.</summary>
    public int UncommittedVersions => Volatile.Read(ref _uncommitted);

    /// <summary>The bytes the speculation section of the next cookie takes; under the gate.</summary>
    public int Bytes => _bytes;

    /// <summary>Completes when room may have been freed; take it under the gate (so a prune after a check is not missed).</summary>
    public Task RoomFreed => Volatile.Read(ref _roomFreed).Task;

    /// <summary>General speculation connects: the counts are taken against this StateObject's committed version from now on.</summary>
    public void Attach(StateObject dse) => _dse = dse;

    /// <summary>Before an action starts: waits while backpressure holds new actions. Outside the gate and any action.</summary>
    public ValueTask PaceAsync(StateObject dse, Func<CancellationToken, ValueTask> recount, CancellationToken cancellationToken)
        => Volatile.Read(ref _held) == 0 ? ValueTask.CompletedTask : PaceSlowAsync(dse, recount, cancellationToken);

    /// <summary>Waits for <paramref name="freed"/>, or for a change of the StateObject's view (a fault or disposal completes it too), to re-check.</summary>
    public static async ValueTask WaitForRoomAsync(Task freed, StateObject dse, CancellationToken cancellationToken)
    {
        var viewChanged = dse.WaitForViewChangeAsync(dse.ClusterView.Epoch, CancellationToken.None);
        await Task.WhenAny(freed, viewChanged).WaitAsync(cancellationToken).ConfigureAwait(false);
    }

    /// <summary>Under the gate: records were added, pruned or restored; recounts and re-evaluates the hold.</summary>
    public void Recount(DarqVersions versions, bool freed)
    {
        Volatile.Write(ref _bytes, DarqCommitState.SpeculationSize(versions.Voided, versions.Records));
        Volatile.Write(ref _uncommitted, CountUncommitted(versions));
        EvaluateHold();
        if (freed)
        {
            SignalRoomFreed();
        }
    }

    /// <summary>Under the gate: a version was persisted (its record added).</summary>
    public void NoteVersionPersisted(DarqVersions versions, DarqVersionRecord record)
    {
        Volatile.Write(ref _bytes, _bytes + record.Size);
        Volatile.Write(ref _uncommitted, CountUncommitted(versions));
        EvaluateHold();
    }

    /// <summary>Under the gate: undo entries were added.</summary>
    public void NoteUndoGrowth(int entries)
    {
        Volatile.Write(ref _bytes, _bytes + (16 * entries));
        if (_held == 0)
        {
            EvaluateHold();
        }
    }

    /// <summary>Whether the StateObject heard of a commit since the counts were last taken (a waiter then recounts).</summary>
    public bool CommitHeardSinceCount(StateObject dse) => dse.CommittedVersion != Volatile.Read(ref _countedAgainst);

    private static TaskCompletionSource NewRoomSignal() => new(TaskCreationOptions.RunContinuationsAsynchronously);

    private async ValueTask PaceSlowAsync(StateObject dse, Func<CancellationToken, ValueTask> recount, CancellationToken cancellationToken)
    {
        long started = Stopwatch.GetTimestamp();
        Interlocked.Increment(ref _heldInEpisode);
        DarqInstrumentation.HeldActions.Add(1, _core.Tag);
        try
        {
            while (true)
            {
                // The signal first: a release after this read completes it.
                var freed = RoomFreed;
                if (Volatile.Read(ref _held) == 0)
                {
                    return;
                }

                _core.ThrowIfClosed();
                if (dse.Fault is not null)
                {
                    // The action's start reports the fault.
                    return;
                }

                // A commit that LibDse does not follow with a prune (its first one, or one heard before the records were
                // read back at recovery) changes the count too: recount before waiting, once per commit heard.
                if (CommitHeardSinceCount(dse))
                {
                    await recount(cancellationToken).ConfigureAwait(false);
                    if (Volatile.Read(ref _held) == 0)
                    {
                        return;
                    }
                }

                await WaitForRoomAsync(freed, dse, cancellationToken).ConfigureAwait(false);
            }
        }
        finally
        {
            if (DarqInstrumentation.HoldDuration.Enabled)
            {
                DarqInstrumentation.HoldDuration.Record(Stopwatch.GetElapsedTime(started).TotalMilliseconds, _core.Tag);
            }
        }
    }

    /// <summary>Under the gate: the records above the version the coordinator committed (as last heard), counted from the newest.</summary>
    private int CountUncommitted(DarqVersions versions)
    {
        long committed = _dse?.CommittedVersion ?? 0;
        Volatile.Write(ref _countedAgainst, committed);
        var records = versions.Records;
        int count = 0;
        for (int i = records.Count - 1; i >= 0 && records[i].Version > committed; i--)
        {
            count++;
        }

        return count;
    }

    /// <summary>Under the gate: starts or ends a hold as the counts say, and logs it.</summary>
    private void EvaluateHold()
    {
        var options = _core.Options;
        if (options.Speculation != DarqSpeculationMode.General)
        {
            return;
        }

        bool hold = _uncommitted > 0 && (_uncommitted >= options.MaxUncommittedVersions || _bytes >= options.MaxSpeculationBytes);
        if (hold == (_held != 0))
        {
            return;
        }

        var time = options.TimeProvider;
        long now = time.GetTimestamp();
        if (hold)
        {
            // The episode's count first: a waiter that sees the hold counts itself in it.
            Volatile.Write(ref _heldInEpisode, 0);
            _holdStarted = now;
            Volatile.Write(ref _held, 1);
            _holdWarned = _lastHoldWarning == 0 || time.GetElapsedTime(_lastHoldWarning, now) >= HoldWarningInterval;
            if (_holdWarned)
            {
                DarqLogMessages.BackpressureStarted(_core.Logger, _core.Name, _uncommitted, options.MaxUncommittedVersions, _bytes,
                    options.MaxSpeculationBytes, _quietEpisodes);
                _lastHoldWarning = now;
                _quietEpisodes = 0;
            }
            else
            {
                _quietEpisodes++;
                DarqLogMessages.BackpressureChanged(_core.Logger, _core.Name, "started", _uncommitted, _bytes);
            }

            return;
        }

        Volatile.Write(ref _held, 0);
        if (_holdWarned)
        {
            DarqLogMessages.BackpressureEnded(_core.Logger, _core.Name, (long)time.GetElapsedTime(_holdStarted, now).TotalMilliseconds,
                Volatile.Read(ref _heldInEpisode));
        }
        else
        {
            DarqLogMessages.BackpressureChanged(_core.Logger, _core.Name, "ended", _uncommitted, _bytes);
        }

        SignalRoomFreed();
    }

    /// <summary>Wakes every waiter to re-check (a new signal for the next wait first).</summary>
    private void SignalRoomFreed() => Interlocked.Exchange(ref _roomFreed, NewRoomSignal()).TrySetResult();
}
