namespace Dse.Darq;

/// <summary>
/// LibDse's view of a DARQ under general speculation (<see cref="DarqStateObject"/>): Persist is a DARQ commit whose cookie
/// records the version; ListVersions lists the durable records; Prune forgets versions that will never be restored; and
/// Restore voids the log after a version with a ROLLBACK entry and rebuilds the state of that version.
/// </summary>
internal sealed class DarqVersionStore
{
    private readonly DarqParts _parts;

    public DarqVersionStore(DarqParts parts)
    {
        _parts = parts;
    }

    /// <summary>Persist: a DARQ commit whose cookie records the version; the completion fires once it is durable.</summary>
    public void Persist(long version, ReadOnlyMemory<byte> metadata, PersistCompletion completion)
    {
        var core = _parts.Core;
        DarqVersionRecord record;

        // LibDse's Persist is synchronous; the gate is held only for in-memory work or a short wait for log memory.
        core.Gate.Wait();
        try
        {
            core.ThrowIfClosed();
            var bound = _parts.Committer.CompletedPrefixStart();
            record = new DarqVersionRecord
            {
                Version = version,
                Tail = core.Log.TailAddress,
                NextSequence = core.NextSequence,
                BoundAddress = bound.Lsn,
                BoundSequence = bound.Sequence,
                Metadata = metadata.ToArray(),
            };
            _parts.Versions.Add(record);

            // The next commit must carry the new record even if no entry was appended since the last one.
            _parts.Committer.MarkDirty();
        }
        finally
        {
            core.Gate.Release();
        }

        // The state is captured (the record); the commit, whose cookie holds the record, may cover entries appended
        // after it: the record says where this version ends.
        _ = Task.Run(() => CompletePersistAsync(record, completion));
    }

    /// <summary>ListVersions: the durable, unpruned version records.</summary>
    public async ValueTask<IReadOnlyList<PersistedVersion>> ListAsync(CancellationToken cancellationToken)
    {
        var core = _parts.Core;
        await core.Gate.WaitAsync(cancellationToken).ConfigureAwait(false);
        try
        {
            var records = _parts.Versions.Records;
            var list = new List<PersistedVersion>(records.Count);
            foreach (var record in records)
            {
                if (Volatile.Read(ref record.DurableFlag) != 0)
                {
                    list.Add(new PersistedVersion(record.Version, record.Metadata));
                }
            }

            return list;
        }
        finally
        {
            core.Gate.Release();
        }
    }

    /// <summary>Prune: forgets versions that will never be restored; truncation may then reach the oldest remaining one's completed prefix.</summary>
    public void Prune(long version)
    {
        var core = _parts.Core;

        // LibDse's Prune is synchronous, as Persist is.
        core.Gate.Wait();
        try
        {
            _parts.Versions.Prune(version, core.Log.BeginAddress);
        }
        finally
        {
            core.Gate.Release();
        }
    }

    /// <summary>
    /// Restore: goes back to <paramref name="version"/>'s commit. Appends a ROLLBACK entry voiding everything after it,
    /// restores the deduplication table, rebuilds the in-memory state from the log, supersedes the processor (a new one
    /// gets an incarnation above any ever used) and commits before returning.
    /// </summary>
    public async ValueTask<ReadOnlyMemory<byte>> RestoreAsync(long version, CancellationToken cancellationToken)
    {
        var core = _parts.Core;
        var versions = _parts.Versions;
        var log = core.Log;
        ValueTask<(bool, long, long)> pending = default;
        long from;
        long marker = -1;
        long waitFor = 0;
        byte[] metadata;
        await core.Gate.WaitAsync(cancellationToken).ConfigureAwait(false);
        try
        {
            core.ThrowIfClosed();
            DarqVersionRecord? kept = null;
            if (version != 0)
            {
                kept = versions.Records.Find(v => v.Version == version) ?? throw new InvalidOperationException(
                    $"DARQ '{core.Name}' cannot restore version {version}; it holds versions [{string.Join(", ", versions.Records.Select(v => v.Version))}].");
            }
            else if (core.BeginSequence != 0)
            {
                throw new InvalidOperationException($"DARQ '{core.Name}' cannot restore the initial state: its log was truncated before address {log.BeginAddress}.");
            }

            from = kept?.Tail ?? log.BeginAddress;
            if (versions.Records.Exists(v => v.Version > version) || log.TailAddress > from)
            {
                long sequence = kept?.NextSequence ?? core.BeginSequence;

                // From here on the restore must complete: nothing below observes the caller's token.
                marker = await core.AppendAsync(DarqEntryFormat.Rollback(sequence, version, from), CancellationToken.None).ConfigureAwait(false);
                waitFor = log.TailAddress;
                core.NextSequence = sequence + 1;
                versions.Void(version, from, marker);
                _parts.Marks.ForgetFrom(from);
                if (kept is null)
                {
                    _parts.Producers.Clear();
                }
                else
                {
                    foreach (var (producer, value) in kept.Undo)
                    {
                        _parts.Producers.Undo(producer, value);
                    }

                    kept.Undo.Clear();
                }

                if (core.Processor is { } processor)
                {
                    processor.Supersede(core.Name, core.Incarnation + 1);
                    core.Processor = null;
                }

                await _parts.Recovery.RebuildAsync(from).ConfigureAwait(false);

                versions.RecountAfterRestore();
                pending = log.CommitStronglyAsync(_parts.Committer.SerializeCookie(check: false), -1, CancellationToken.None);
                _parts.Committer.CommittedAt(waitFor, log.BeginAddress);
                _parts.Outbox.PulseProgress();
            }

            metadata = kept?.Metadata ?? [];
        }
        finally
        {
            core.Gate.Release();
        }

        if (marker >= 0)
        {
            // The void must be durable before anyone learns the restore happened.
            var (success, _, _) = await pending.ConfigureAwait(false);
            if (!success)
            {
                throw new IOException($"DARQ '{core.Name}': FasterLog refused the commit of the rollback to version {version}.");
            }

            await core.WaitForCommitAsync(waitFor, CancellationToken.None).ConfigureAwait(false);
            DarqLogMessages.RolledBack(core.Logger, core.Name, version, from, marker);
            DarqInstrumentation.Rollbacks.Add(1, core.Tag);
            _parts.Committer.SignalCommitted();
        }

        return metadata;
    }

    private async Task CompletePersistAsync(DarqVersionRecord record, PersistCompletion completion)
    {
        try
        {
            await CommitVersionAsync(record.Version).ConfigureAwait(false);
            Volatile.Write(ref record.DurableFlag, 1);
            completion.SetDurable();
            _parts.Committer.SignalCommitted();
        }
#pragma warning disable CA1031 // Reported to LibDse, which faults the StateObject.
        catch (Exception e)
#pragma warning restore CA1031
        {
            DarqLogMessages.PersistFailed(_parts.Core.Logger, e, _parts.Core.Name, record.Version);
            completion.SetFailed(e);
        }
    }

    /// <summary>
    /// Issues a commit whose cookie holds every version record captured so far and waits for that very commit. Not
    /// <see cref="DarqCommitter.CommitAsync"/>: when another commit (group commit, CommitAsync, truncation) already carried
    /// the record, it takes its "nothing changed" path and returns once the log's tail is durable, which it may have been
    /// long before, while the commit whose cookie holds the record is still in flight. The caller signals the commit once
    /// the version is marked durable.
    /// </summary>
    private async Task CommitVersionAsync(long version)
    {
        var core = _parts.Core;
        IssuedCommit commit;
        await core.Gate.WaitAsync(CancellationToken.None).ConfigureAwait(false);
        try
        {
            core.ThrowIfClosed();
            commit = _parts.Committer.IssueUnderGate();
        }
        finally
        {
            core.Gate.Release();
        }

        await _parts.Committer.AwaitIssuedAsync(commit, $"of version {version}", CancellationToken.None).ConfigureAwait(false);
    }
}
