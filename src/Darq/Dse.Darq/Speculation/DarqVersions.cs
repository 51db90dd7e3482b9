namespace Dse.Darq;

/// <summary>
/// General speculation's records in the log: the persisted, unpruned versions (each with where it ends and its
/// deduplication undo table), the log ranges voided by restores, and how far truncation may go. Empty in the other modes,
/// where every query answers as for a log with no versions.
/// </summary>
/// <remarks>Every member runs under the DARQ's gate. Invariant: <see cref="Records"/> is in ascending version order.</remarks>
internal sealed class DarqVersions
{
    private readonly DarqCore _core;
    private readonly DarqPacing _pacing;

    /// <summary>
    /// Whether general speculation is connected: truncation is limited by the versions, and producer changes are recorded
    /// for their undo. Records recovered from a log that general speculation wrote stay as they were in another mode.
    /// </summary>
    private bool _limiting;

    /// <summary>Truncation never passes this (the completed prefix of the oldest restorable version).</summary>
    private StepStart _truncationLimit;

    public DarqVersions(DarqCore core, DarqPacing pacing)
    {
        _core = core;
        _pacing = pacing;
    }

    /// <summary>Log ranges [From, Until) voided by restores.</summary>
    public List<(long From, long Until)> Voided { get; } = [];

    /// <summary>Persisted, unpruned versions, ascending.</summary>
    public List<DarqVersionRecord> Records { get; } = [];

    /// <summary>Every address below this belongs to a version the coordinator committed.</summary>
    public long PrunedTail { get; private set; }

    /// <summary>Whether the recovered commit was written under general speculation.</summary>
    public bool RecoveredGeneral { get; private set; }

    /// <summary>Recovery: takes the speculation state of the recovered commit.</summary>
    public void Recover(DarqCommitState state)
    {
        RecoveredGeneral = state.General;
        Voided.AddRange(state.Voided);
        Records.AddRange(state.Versions);
        _pacing.Recount(this, freed: false);
    }

    /// <summary>General speculation connects: truncation is limited from now on, starting at the begin address.</summary>
    public void StartLimiting(StepStart begin)
    {
        _truncationLimit = begin;
        _limiting = true;
    }

    public bool IsVoided(long address)
    {
        foreach (var (from, until) in Voided)
        {
            if (address >= from && address < until)
            {
                return true;
            }
        }

        return false;
    }

    /// <summary>Truncation stops at the completed prefix of the oldest restorable version.</summary>
    public StepStart LimitTruncation(StepStart start) => _limiting && start.Lsn > _truncationLimit.Lsn ? _truncationLimit : start;

    /// <summary>A producer's table entry changes; versions that can still be restored remember its old value.</summary>
    public void NoteProducerChange(long producerId, long oldValue)
    {
        if (!_limiting)
        {
            return;
        }

        int added = 0;
        foreach (var record in Records)
        {
            if (record.Undo.TryAdd(producerId, oldValue))
            {
                added++;
            }
        }

        if (added > 0)
        {
            _pacing.NoteUndoGrowth(added);
        }
    }

    /// <summary>
    /// Before a deduplicated enqueue appends or a producer is retired: throws <see cref="SpeculationRoomException"/> when
    /// the producer's undo entries would leave less than <see cref="DarqCommitState.RecordReserve"/> of the section free.
    /// </summary>
    public void EnsureUndoRoom(long producerId)
    {
        if (!_limiting)
        {
            return;
        }

        const int limit = DarqCommitState.SpeculationRoom - DarqCommitState.RecordReserve;
        int bytes = _pacing.Bytes;

        // Cheap bound first: one entry in every record.
        if (bytes + (16 * Records.Count) <= limit)
        {
            return;
        }

        int growth = 0;
        foreach (var record in Records)
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

        DarqLogMessages.ProducerChangeHeld(_core.Logger, _core.Name, producerId, bytes + growth, limit);
        throw new SpeculationRoomException(_pacing.RoomFreed);
    }

    /// <summary>
    /// The version holding the entry at <paramref name="address"/>: <see cref="Recoverable"/> when it is committed already,
    /// the version of the record it falls in, or <paramref name="current"/> when no persisted version holds it.
    /// </summary>
    /// <exception cref="DseRolledBackException">The entry was rolled back.</exception>
    public long VersionOf(long address, long current)
    {
        if (IsVoided(address))
        {
            throw new DseRolledBackException($"DARQ '{_core.Name}': the entry at address {address} was rolled back.");
        }

        if (address < PrunedTail)
        {
            return Recoverable;
        }

        foreach (var record in Records)
        {
            if (record.Tail > address)
            {
                return record.Version;
            }
        }

        return current;
    }

    /// <summary>The answer of <see cref="VersionOf"/> for an entry inside a version the coordinator committed.</summary>
    public const long Recoverable = -2;

    /// <summary>Whether the entry at <paramref name="address"/> is inside a version the coordinator committed (it can never be rolled back).</summary>
    public bool IsRecoverable(long address, long committedVersion)
    {
        if (IsVoided(address))
        {
            return false;
        }

        if (address < PrunedTail)
        {
            return true;
        }

        foreach (var record in Records)
        {
            if (record.Tail > address)
            {
                // A committed version is never rolled back, so its number cannot belong to another lineage here.
                return committedVersion >= record.Version;
            }
        }

        // In the current version, not persisted yet.
        return false;
    }

    /// <summary>A version was persisted: its record joins the next cookie.</summary>
    public void Add(DarqVersionRecord record)
    {
        Records.Add(record);
        _pacing.NoteVersionPersisted(this, record);
    }

    /// <summary>Forgets the versions up to <paramref name="version"/>, which will never be restored; truncation may then reach the oldest remaining one's completed prefix.</summary>
    public void Prune(long version, long beginAddress)
    {
        while (Records.Count > 0 && Records[0].Version <= version)
        {
            PrunedTail = Math.Max(PrunedTail, Records[0].Tail);
            Records.RemoveAt(0);
        }

        if (Records.Count > 0 && Records[0].BoundAddress > _truncationLimit.Lsn)
        {
            _truncationLimit = new StepStart(Records[0].BoundAddress, Records[0].BoundSequence);
        }

        Voided.RemoveAll(v => v.Until < beginAddress);
        _pacing.Recount(this, freed: true);
    }

    /// <summary>A restore to <paramref name="version"/> voided [<paramref name="from"/>, <paramref name="marker"/>): the later versions are gone.</summary>
    public void Void(long version, long from, long marker)
    {
        Voided.Add((from, marker));
        Records.RemoveAll(v => v.Version > version);
    }

    /// <summary>The records changed (a restore): recounts the section and wakes waiters for room.</summary>
    public void RecountAfterRestore() => _pacing.Recount(this, freed: true);

    /// <summary>Recounts the section against the committed version as heard now (a waiter's re-check).</summary>
    public void Recount() => _pacing.Recount(this, freed: false);
}
