using FASTER.core;

namespace Dse.Services;

/// <summary>Persist, restore, prune and recovery: commit records, rollback markers and the commit cookie.</summary>
public sealed partial class SpeculativeLog
{
    /// <inheritdoc />
    /// <remarks>Appends the version's commit record and commits the log up to it with the state as cookie.</remarks>
    protected override void Persist(long version, ReadOnlyMemory<byte> metadata, PersistCompletion completion)
    {
        byte[] cookie;
        lock (_lock)
        {
            var record = LogEntryFormat.Commit(version, _lastCommit, _logicalBegin, metadata.Span);
            long address = _log.Enqueue(record);
            _state.Versions.Add(new LogVersion(version, address, _log.TailAddress, _logicalBegin, metadata.ToArray()));
            _state.LastRecord = address;
            _lastCommit = address;
            cookie = _state.Serialize();
        }

        _ = CommitAsync(cookie, version, completion);
    }

    /// <inheritdoc />
    /// <remarks>
    /// FasterLog cannot cut its tail, so a restore appends a rollback marker and commits a state that records the
    /// dropped range [end of the version's commit record, end of the marker): readers and recovery skip it, and the
    /// later versions are gone from the committed state before this returns.
    /// </remarks>
    protected override async ValueTask<ReadOnlyMemory<byte>> RestoreAsync(long version, CancellationToken cancellationToken)
    {
        byte[]? cookie = null;
        byte[] metadata;
        long dropFrom;
        long dropUntil = 0;
        lock (_lock)
        {
            var kept = version == 0 ? null : Find(version)
                ?? throw new InvalidOperationException($"SpeculativeLog {Id}: cannot restore version {version}; the log holds {DescribeVersions()}.");
            dropFrom = kept?.EndAddress ?? _log.BeginAddress;
            bool later = _state.Versions.Count > 0 && _state.Versions[^1].Version > version;
            if (later || _log.TailAddress > dropFrom)
            {
                _state.Versions.RemoveAll(v => v.Version > version);
                long marker = _log.Enqueue(LogEntryFormat.Rollback(version, dropFrom));
                dropUntil = _log.TailAddress;
                _state.Dropped.Add((dropFrom, dropUntil));
                _state.LastRecord = marker;
                while (_uncommitted.Count > 0 && _uncommitted.Keys[^1] >= dropFrom)
                {
                    _uncommitted.RemoveAt(_uncommitted.Count - 1);
                }

                cookie = _state.Serialize();
            }

            _lastCommit = kept?.RecordAddress ?? -1;
            _logicalBegin = Math.Max(_log.BeginAddress, kept?.LogicalBegin ?? 0);
            metadata = kept?.Metadata ?? [];
        }

        if (cookie is not null)
        {
            // The drop must be durable before anyone learns the restore happened.
            await CommitCoreAsync(cookie, cancellationToken).ConfigureAwait(false);
            ServicesLog.LogRolledBack(Logger, Id, version, dropFrom, dropUntil);
        }

        return metadata;
    }

    /// <inheritdoc />
    /// <remarks>Forgets the versions and reclaims log space below the logical begin of the newest pruned version.</remarks>
    protected override void Prune(long version)
    {
        lock (_lock)
        {
            long begin = -1;
            while (_state.Versions.Count > 0 && _state.Versions[0].Version <= version)
            {
                begin = _state.Versions[0].LogicalBegin;
                _state.Versions.RemoveAt(0);
            }

            if (begin > _log.BeginAddress)
            {
                // Page starts are always valid truncation points; the rest of the page stays until a later prune.
                _log.TruncateUntilPageStart(begin);
                _state.Dropped.RemoveAll(d => d.Until <= begin);
                ServicesLog.LogPruned(Logger, Id, version, begin);
            }
        }
    }

    /// <inheritdoc />
    protected override async ValueTask<IReadOnlyList<PersistedVersion>> ListVersionsAsync(CancellationToken cancellationToken)
    {
        long lastRecord;
        lock (_lock)
        {
            lastRecord = _tailVerified ? -1 : _state.LastRecord;
        }

        if (lastRecord >= 0)
        {
            await VerifyRecordAsync(lastRecord, cancellationToken).ConfigureAwait(false);
        }

        lock (_lock)
        {
            _tailVerified = true;
            var versions = new List<PersistedVersion>(_state.Versions.Count);
            foreach (var v in _state.Versions)
            {
                // Versions whose commit is in flight are above the durable address.
                if (v.EndAddress <= _durableUntil)
                {
                    versions.Add(new PersistedVersion(v.Version, v.Metadata));
                }
            }

            return versions;
        }
    }

    private LogCommitState Recover()
    {
        bool any = false;
        foreach (long _ in _commitManager.ListCommits())
        {
            any = true;
            break;
        }

        if (!any)
        {
            return new LogCommitState();
        }

        string where = $"SpeculativeLog {Id}";
        try
        {
            _log.Recover(-1);
        }
        catch (Exception e) when (e is FasterException or IOException or InvalidOperationException)
        {
            throw new InvalidDataException($"{where}: FasterLog cannot recover its newest commit: {e.Message}", e);
        }

        var cookie = _log.RecoveredCookie
            ?? throw new InvalidDataException($"{where}: the newest commit (until address {_log.TailAddress}) carries no SpeculativeLog state.");
        return LogCommitState.Deserialize(cookie, where);
    }

    /// <summary>Reads the last record the recovered commit names, so a lost or corrupt tail is an error, not silent loss.</summary>
    private async ValueTask VerifyRecordAsync(long address, CancellationToken cancellationToken)
    {
        (byte[]? bytes, int length) read;
        try
        {
            read = await _log.ReadAsync(address, 0, cancellationToken).ConfigureAwait(false);
        }
        catch (Exception e) when (e is FasterException or IOException or IndexOutOfRangeException or ArgumentException or OverflowException)
        {
            throw new InvalidDataException($"SpeculativeLog {Id}: the committed record at address {address} cannot be read: {e.Message}", e);
        }

        string? problem = read.bytes is null
            ? "it cannot be read from the log device"
            : LogEntryFormat.TryParse(read.bytes.AsSpan(0, read.length), out var kind, out _) ?? (kind == LogRecordKind.Entry ? "it is a user entry, not a commit record or rollback marker" : null);
        if (problem is not null)
        {
            throw new InvalidDataException($"SpeculativeLog {Id}: the log's committed tail is lost or corrupt: the record at address {address}: {problem}.");
        }
    }

    private async Task CommitAsync(byte[] cookie, long version, PersistCompletion completion)
    {
        try
        {
            await CommitCoreAsync(cookie, CancellationToken.None).ConfigureAwait(false);
            completion.SetDurable();
        }
        catch (Exception e)
        {
            ServicesLog.LogCommitFailed(Logger, Id, version, e);
            completion.SetFailed(e);
        }
    }

    /// <summary>Commits the log up to its tail with <paramref name="cookie"/> and waits until that commit is durable.</summary>
    private async ValueTask CommitCoreAsync(byte[] cookie, CancellationToken cancellationToken)
    {
        var (success, tail, _) = await _log.CommitStronglyAsync(cookie, -1, cancellationToken).ConfigureAwait(false);
        if (!success)
        {
            throw new IOException($"SpeculativeLog {Id}: FasterLog refused the commit.");
        }

        lock (_lock)
        {
            if (tail > _durableUntil)
            {
                _durableUntil = tail;
                while (_uncommitted.Count > 0 && _uncommitted.Keys[0] < tail)
                {
                    _uncommitted.RemoveAt(0);
                }
            }
        }
    }

    private LogVersion? Find(long version)
    {
        foreach (var v in _state.Versions)
        {
            if (v.Version == version)
            {
                return v;
            }
        }

        return null;
    }

    private string DescribeVersions() =>
        _state.Versions.Count == 0 ? "no versions" : "versions " + string.Join(", ", _state.Versions.Select(v => v.Version));
}
