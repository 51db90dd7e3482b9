namespace Dse;

/// <summary>
/// A <see cref="StateObject"/>'s book of versions: the ones handed to Persist and not yet committed, and what each
/// rollback decision it applied did to it. Thread-safe; which thread may change what follows the owner's locks (the
/// writer adds, restores and prunes, the reporting lock marks reports).
/// </summary>
/// <remarks>
/// Invariants: records ascend by version and lie above the pruned version; rollback outcomes ascend by world-line.
/// The lock is taken on the action path only for a message from a lower world-line (<see cref="SurvivedOwnRollback"/>).
/// </remarks>
internal sealed class VersionBook
{
    private readonly Lock _lock = new();

    // Versions handed to Persist and not yet committed, ascending.
    private readonly List<VersionRecord> _records = [];

    // What each applied decision did: the world-line and the version restored (long.MaxValue: kept). Lets a waiter
    // tell whether its version survived.
    private readonly List<(long WorldLine, long RestoredTo)> _rollbacks = [];

    /// <summary>Adds the version the writer just handed to Persist, above every other.</summary>
    public void Add(VersionRecord record)
    {
        lock (_lock)
        {
            _records.Add(record);
        }
    }

    /// <summary>Persist reported <paramref name="record"/> durable.</summary>
    public void MarkDurable(VersionRecord record)
    {
        lock (_lock)
        {
            record.Durable = true;
        }
    }

    /// <summary>
    /// After a connect: the stored versions the coordinator took into its lineage (above the committed version, up to
    /// the restored one), durable and known to the coordinator, replace whatever the book held.
    /// </summary>
    public void Restart(IReadOnlyList<VersionReport> stored, long committed, long restored, long worldLine)
    {
        lock (_lock)
        {
            _records.Clear();
            foreach (var r in stored)
            {
                if (r.Version > committed && r.Version <= restored)
                {
                    // The coordinator took these into its current lineage, whatever world-line they were persisted in
                    // (a fresh coordinator after a whole-cluster restart starts again at world-line 0).
                    _records.Add(new VersionRecord(r.Version, Math.Min(r.WorldLine, worldLine), [.. r.Dependencies]) { Durable = true, Reported = true });
                }
            }
        }
    }

    /// <summary>The lowest version not reported yet, if it is durable; null when there is none or it is not durable yet.</summary>
    public VersionRecord? NextToReport()
    {
        lock (_lock)
        {
            foreach (var r in _records)
            {
                if (!r.Reported)
                {
                    return r.Durable ? r : null;
                }
            }
        }

        return null;
    }

    /// <summary>The coordinator has <paramref name="record"/>.</summary>
    public void MarkReported(VersionRecord record)
    {
        lock (_lock)
        {
            record.Reported = true;
        }
    }

    /// <summary>The coordinator has every one of <paramref name="records"/>.</summary>
    public void MarkReported(List<VersionRecord> records)
    {
        lock (_lock)
        {
            foreach (var r in records)
            {
                r.Reported = true;
            }
        }
    }

    /// <summary>The durable versions, for a resync.</summary>
    public List<VersionRecord> Durable()
    {
        lock (_lock)
        {
            return [.. _records.Where(r => r.Durable)];
        }
    }

    /// <summary>
    /// Whether nothing above <paramref name="cut"/> depends on a version <paramref name="decision"/> does not keep, so
    /// those versions may stay through it.
    /// </summary>
    public bool AboveCutSurvives(RollbackDecision decision, long cut)
    {
        lock (_lock)
        {
            foreach (var r in _records)
            {
                if (r.Version <= cut)
                {
                    continue;
                }

                foreach (var d in r.Dependencies)
                {
                    if (!decision.Survives(d))
                    {
                        return false;
                    }
                }
            }
        }

        return true;
    }

    /// <summary>A rollback restored <paramref name="cut"/>: the versions above it are gone.</summary>
    public void DiscardAbove(long cut)
    {
        lock (_lock)
        {
            _records.RemoveAll(r => r.Version > cut);
        }
    }

    /// <summary>
    /// Records what the decision of <paramref name="worldLine"/> did. When the versions above <paramref name="cut"/>
    /// were kept, they were refused as stale while the decision was pending, so they are to be reported again.
    /// </summary>
    public void RecordRollback(long worldLine, long cut, bool restored)
    {
        lock (_lock)
        {
            if (!restored)
            {
                foreach (var r in _records)
                {
                    if (r.Version > cut)
                    {
                        r.Reported = false;
                    }
                }
            }

            _rollbacks.Add((worldLine, restored ? cut : long.MaxValue));
        }
    }

    /// <summary>
    /// The first applied decision after <paramref name="worldLine"/> that restored a version below
    /// <paramref name="version"/>: own version <paramref name="version"/> of that world-line was rolled back by it.
    /// </summary>
    public bool TryFindRollbackOf(long version, long worldLine, out long decidedWorldLine)
    {
        lock (_lock)
        {
            foreach (var (decided, restoredTo) in _rollbacks)
            {
                if (decided > worldLine && restoredTo < version)
                {
                    decidedWorldLine = decided;
                    return true;
                }
            }
        }

        decidedWorldLine = 0;
        return false;
    }

    /// <summary>
    /// Whether own version <paramref name="version"/> survived the decision of <paramref name="worldLine"/> as the
    /// owner applied it: kept outright, or within the version it restored. Null if the owner did not apply that decision.
    /// </summary>
    public bool? SurvivedOwnRollback(long worldLine, long version)
    {
        lock (_lock)
        {
            foreach (var (decided, restoredTo) in _rollbacks)
            {
                if (decided == worldLine)
                {
                    return version <= restoredTo;
                }
            }
        }

        return null;
    }

    /// <summary>The committed versions up to <paramref name="committed"/> will never be restored: they leave the book.</summary>
    public void DiscardThrough(long committed)
    {
        lock (_lock)
        {
            _records.RemoveAll(r => r.Version <= committed);
        }
    }
}
