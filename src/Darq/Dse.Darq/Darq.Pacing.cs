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
/// before anything is appended (<see cref="EnsureUndoRoom"/>): a change that would leave less than
/// <see cref="DarqCommitState.RecordReserve"/> free ends its action, waits for room and starts over. The reserve is left
/// for the records persisted after the hold starts.</para>
/// </remarks>
public sealed partial class Darq
{
    /// <summary>How often the start of a hold is logged as a warning at most; shorter episodes in between go to debug.</summary>
    private static readonly TimeSpan HoldWarningInterval = TimeSpan.FromSeconds(30);

    /// <summary>The bytes the speculation section of the next cookie takes; written under the gate, read with Volatile.</summary>
    private int _speculationBytes;

    /// <summary>Persisted versions the coordinator has not committed (records after the committed one); written under the gate.</summary>
    private int _uncommittedVersions;

    /// <summary>The committed version (as last heard) <see cref="_uncommittedVersions"/> was counted against; read without the gate.</summary>
    private long _countedAgainst;

    /// <summary>1 while new actions wait (backpressure); written under the gate (<see cref="EvaluateHold"/>), read without it.</summary>
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

    /// <summary>
    /// General speculation: whether new actions wait because too many versions are not committed by the coordinator, or
    /// their records fill the commit record (<see cref="DarqOptions.MaxUncommittedVersions"/>,
    /// <see cref="DarqOptions.MaxSpeculationBytes"/>). Always <see langword="false"/> in other modes.
    /// </summary>
    public bool IsBackpressured => Volatile.Read(ref _held) != 0;

    /// <summary>General speculation: the persisted versions the coordinator has not committed yet (0 in other modes).</summary>
    public int UncommittedVersionCount => _dse is null ? 0 : Volatile.Read(ref _uncommittedVersions);

    /// <summary>
    /// General speculation: waits while new actions are held back (<see cref="IsBackpressured"/>); returns at once
    /// otherwise, and in other modes. For code that advances the StateObject's version itself
    /// (<see cref="StateObject.AdvanceVersionAsync"/>): an explicit advance persists a version even when nothing changed,
    /// which backpressure does not hold back, so such a driver waits here before each advance.
    /// </summary>
    /// <param name="cancellationToken">Cancels waiting.</param>
    /// <returns>A task that completes once there is room, or at once when the StateObject faulted (its next use throws).</returns>
    /// <exception cref="ObjectDisposedException">The DARQ was disposed while waiting.</exception>
    public ValueTask WaitForSpeculationRoomAsync(CancellationToken cancellationToken = default)
        => _dse is { } dse ? PaceAsync(dse, cancellationToken) : ValueTask.CompletedTask;

    private static TaskCompletionSource NewRoomSignal() => new(TaskCreationOptions.RunContinuationsAsynchronously);

    /// <summary>Before an action starts: waits while backpressure holds new actions. Outside the gate and any action.</summary>
    private ValueTask PaceAsync(StateObject dse, CancellationToken cancellationToken)
        => Volatile.Read(ref _held) == 0 ? ValueTask.CompletedTask : PaceSlowAsync(dse, cancellationToken);

    private async ValueTask PaceSlowAsync(StateObject dse, CancellationToken cancellationToken)
    {
        long started = Stopwatch.GetTimestamp();
        Interlocked.Increment(ref _heldInEpisode);
        DarqInstrumentation.HeldActions.Add(1, _tag);
        try
        {
            while (true)
            {
                // The signal first: a release after this read completes it.
                var freed = Volatile.Read(ref _roomFreed).Task;
                if (Volatile.Read(ref _held) == 0)
                {
                    return;
                }

                ThrowIfDisposed();
                if (dse.Fault is not null)
                {
                    // The action's start reports the fault.
                    return;
                }

                // A commit that LibDse does not follow with a prune (its first one, or one heard before the records were
                // read back at recovery) changes the count too: recount before waiting, once per commit heard.
                if (dse.CommittedVersion != Volatile.Read(ref _countedAgainst))
                {
                    await RecountAsync(cancellationToken).ConfigureAwait(false);
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
                DarqInstrumentation.HoldDuration.Record(Stopwatch.GetElapsedTime(started).TotalMilliseconds, _tag);
            }
        }
    }

    /// <summary>Waits for <paramref name="freed"/>, or for a change of the StateObject's view (a fault or disposal completes it too), to re-check.</summary>
    private static async ValueTask WaitForRoomAsync(Task freed, StateObject dse, CancellationToken cancellationToken)
    {
        var viewChanged = dse.WaitForViewChangeAsync(dse.ClusterView.Epoch, CancellationToken.None);
        await Task.WhenAny(freed, viewChanged).WaitAsync(cancellationToken).ConfigureAwait(false);
    }

    /// <summary>
    /// Under the gate, before a deduplicated enqueue appends: throws <see cref="SpeculationRoomException"/> when the
    /// producer's undo entries would leave less than <see cref="DarqCommitState.RecordReserve"/> of the section free.
    /// </summary>
    private void EnsureUndoRoom(long producerId)
    {
        const int limit = DarqCommitState.SpeculationRoom - DarqCommitState.RecordReserve;
        int bytes = _speculationBytes;

        // Cheap bound first: one entry in every record.
        if (bytes + (16 * _versions.Count) <= limit)
        {
            return;
        }

        int growth = 0;
        foreach (var record in _versions)
        {
            if (!record.Undo.ContainsKey(producerId))
            {
                growth += 16;
            }
        }

        if (bytes + growth <= limit)
        {
            return;
        }

        DarqLog.ProducerChangeHeld(_logger, Name, producerId, bytes + growth, limit);
        throw new SpeculationRoomException(Volatile.Read(ref _roomFreed).Task);
    }

    /// <summary>A waiter's re-check: recounts under the gate.</summary>
    private async ValueTask RecountAsync(CancellationToken cancellationToken)
    {
        await _gate.WaitAsync(cancellationToken).ConfigureAwait(false);
        try
        {
            ThrowIfDisposed();
            RecountSpeculation(freed: false);
        }
        finally
        {
            _gate.Release();
        }
    }

    /// <summary>Under the gate: records were added, pruned or restored; recounts and re-evaluates the hold.</summary>
    private void RecountSpeculation(bool freed)
    {
        Volatile.Write(ref _speculationBytes, DarqCommitState.SpeculationSize(_voided, _versions));
        Volatile.Write(ref _uncommittedVersions, CountUncommitted());
        EvaluateHold();
        if (freed)
        {
            SignalRoomFreed();
        }
    }

    /// <summary>Under the gate: a version was persisted (its record added).</summary>
    private void NoteVersionPersisted(DarqVersionRecord record)
    {
        Volatile.Write(ref _speculationBytes, _speculationBytes + record.Size);
        Volatile.Write(ref _uncommittedVersions, CountUncommitted());
        EvaluateHold();
    }

    /// <summary>Under the gate: the records above the version the coordinator committed (as last heard), counted from the newest.</summary>
    private int CountUncommitted()
    {
        long committed = _dse?.CommittedVersion ?? 0;
        Volatile.Write(ref _countedAgainst, committed);
        int count = 0;
        for (int i = _versions.Count - 1; i >= 0 && _versions[i].Version > committed; i--)
        {
            count++;
        }

        return count;
    }

    /// <summary>Under the gate: undo entries were added.</summary>
    private void NoteUndoGrowth(int entries)
    {
        Volatile.Write(ref _speculationBytes, _speculationBytes + (16 * entries));
        if (_held == 0)
        {
            EvaluateHold();
        }
    }

    /// <summary>Under the gate: starts or ends a hold as the counts say, and logs it.</summary>
    private void EvaluateHold()
    {
        if (_options.Speculation != DarqSpeculationMode.General)
        {
            return;
        }

        bool hold = _uncommittedVersions > 0
            && (_uncommittedVersions >= _options.MaxUncommittedVersions || _speculationBytes >= _options.MaxSpeculationBytes);
        if (hold == (_held != 0))
        {
            return;
        }

        var time = _options.TimeProvider;
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
                DarqLog.BackpressureStarted(_logger, Name, _uncommittedVersions, _options.MaxUncommittedVersions, _speculationBytes,
                    _options.MaxSpeculationBytes, _quietEpisodes);
                _lastHoldWarning = now;
                _quietEpisodes = 0;
            }
            else
            {
                _quietEpisodes++;
                DarqLog.BackpressureChanged(_logger, Name, "started", _uncommittedVersions, _speculationBytes);
            }

            return;
        }

        Volatile.Write(ref _held, 0);
        if (_holdWarned)
        {
            DarqLog.BackpressureEnded(_logger, Name, (long)time.GetElapsedTime(_holdStarted, now).TotalMilliseconds, Volatile.Read(ref _heldInEpisode));
        }
        else
        {
            DarqLog.BackpressureChanged(_logger, Name, "ended", _uncommittedVersions, _speculationBytes);
        }

        SignalRoomFreed();
    }

    /// <summary>Wakes every waiter to re-check (a new signal for the next wait first).</summary>
    private void SignalRoomFreed() => Interlocked.Exchange(ref _roomFreed, NewRoomSignal()).TrySetResult();

    /// <summary>
    /// Internal control flow: a producer change found no room under the gate, before anything was appended. The action
    /// ends and waits for <see cref="RoomFreed"/> (taken under the gate, so a prune after the check is not missed).
    /// </summary>
#pragma warning disable CA1032, CA1064 // Never leaves the DARQ: InActionAsync catches it.
    private sealed class SpeculationRoomException(Task roomFreed)
        : Exception("The speculation section has no room for this producer change until the coordinator commits.")
#pragma warning restore CA1032, CA1064
    {
        public Task RoomFreed { get; } = roomFreed;
    }
}
