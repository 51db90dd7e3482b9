using System.Buffers;
using System.Runtime.InteropServices;
using Dse.Storage;
using FASTER.core;

namespace Dse.Services;

/// <summary>
/// A write-ahead log under distributed speculative execution: one FasterLog on any device, whose entries are visible
/// to readers as soon as they are appended (speculatively: before they are durable or committed), and which a rollback
/// cuts back to the end of a persisted version, durably.
/// </summary>
/// <remarks>
/// <para><see cref="Append"/>, <see cref="TruncateBefore"/>, <see cref="ReadAsync"/> and <see cref="ScanAsync"/> must be
/// called inside an action of this StateObject (between a start and <see cref="StateObject.EndAction()"/>): that is what
/// makes the reader depend on the version it observed, and what keeps them from running during Persist or Restore.
/// Actions may call them concurrently.</para>
/// <para>What a reader sees is speculative: an entry may still be rolled back (and then can never be read again) until
/// its version is committed (<see cref="StateObject.CommittedVersion"/>). An LSN is never reused, not even after a
/// rollback. Format, commit records and rollback in docs/services.md.</para>
/// <para>One instance owns the storage, from construction to dispose (<see cref="SpeculativeLogOptions.ExclusiveStorage"/>):
/// a second instance on the same log files or commit directory, in this process or another, is refused with a
/// <see cref="StorageFencedException"/> naming the lock file.</para>
/// </remarks>
public sealed class SpeculativeLog : StateObject
{
    private readonly SpeculativeLogOptions _logOptions;
    private readonly ILogCommitManager _commitManager;
    private readonly FasterLog _log;

    // Exclusive ownership of the log device's files and the commit directory, from construction to dispose.
    private readonly StorageFence[] _fences;

    // Guards every field below, and orders appends: an entry's address and the tail after it are read under it.
    private readonly Lock _lock = new();

    // Entries above _durableUntil by address, with the address after each: FasterLog reads only committed addresses.
    private readonly SortedList<long, (byte[] Data, long Next)> _uncommitted = [];

    // The durable state plus the versions whose commits are in flight; mirrors the cookie of the latest commit issued.
    private readonly LogCommitState _state;

    // Everything below this address is durable; no uncommitted entry lies below it.
    private long _durableUntil;

    // Reads below this address fail as truncated; it only moves up, except when a rollback restores an older value.
    private long _logicalBegin;

    // The address of the newest commit record (-1 if none), chained into the next one.
    private long _lastCommit = -1;

    // Whether the newest record of the recovered commit was checked (once, at the first listing).
    private bool _tailVerified;

    // How many restores this instance has applied; only grows.
    private long _restores;

    /// <summary>Opens (and recovers, if the storage holds a commit) the log; call ConnectAsync next.</summary>
    /// <exception cref="ArgumentException">An option is invalid; the message names it.</exception>
    /// <exception cref="StorageFencedException">Another instance owns the storage (a lock file is held); nothing was read or written.</exception>
    /// <exception cref="InvalidDataException">The newest commit cannot be recovered.</exception>
    public SpeculativeLog(DseOptions options, SpeculativeLogOptions logOptions)
        : base(options)
    {
        ArgumentNullException.ThrowIfNull(logOptions);
        logOptions.Validate();
        _logOptions = logOptions;

        StorageFence[] fences = [];
        ILogCommitManager? commitManager = null;
        FasterLog? log = null;
        try
        {
            // Owned before anything is read: another instance's commits are either refused or all seen by the recovery.
            fences = AcquireFences(logOptions);

            // FASTER's own manager blocks the committing thread (often a pool thread) on its write: wrapped, the pool makes up for it.
            commitManager = logOptions.CommitManager ?? new PoolSafeCommitManager(new DeviceLogCommitCheckpointManager(
                new LocalStorageNamedDeviceFactory(), new DefaultCheckpointNamingScheme(Path.GetFullPath(logOptions.CommitDirectory!))));

            // Recovered explicitly (Recover below), so that a bad commit is an error rather than an empty log.
            log = new FasterLog(FasterLogs.Settings(logOptions.LogDevice!, commitManager, 1L << logOptions.PageSizeBits, 1L << logOptions.MemorySizeBits,
                1L << logOptions.SegmentSizeBits));
            _fences = fences;
            _commitManager = commitManager;
            _log = log;
            _state = Recover();
        }
        catch
        {
            log?.Dispose();
            DisposeStorage(logOptions, commitManager, fences);
            throw;
        }

        _durableUntil = _log.TailAddress;
        _lastCommit = _state.Versions.Count > 0 ? _state.Versions[^1].RecordAddress : -1;
        _logicalBegin = Math.Max(_log.BeginAddress, _state.Versions.Count > 0 ? _state.Versions[^1].LogicalBegin : 0);
    }

    /// <summary>The address the next entry goes to at the earliest (the end of the log).</summary>
    public long TailLsn => _log.TailAddress;

    /// <summary>Every entry below this address is durable (though maybe not yet committed by the coordinator).</summary>
    public long DurableLsn => Volatile.Read(ref _durableUntil);

    /// <summary>The first address still readable: entries below it were truncated.</summary>
    public long BeginLsn
    {
        get
        {
            lock (_lock)
            {
                return _logicalBegin;
            }
        }
    }

    /// <summary>
    /// How many times this instance has restored a version (at connect after a restart, or in a rollback). Read inside an
    /// action, it tells a reader whether entries it saw earlier may have been dropped: if the count has not changed since,
    /// nothing it read was.
    /// </summary>
    public long RestoreCount => Interlocked.Read(ref _restores);

    /// <summary>
    /// Raised after each restore, once its drop is durable and before any action sees the restored log; the argument is
    /// the restored version. Handlers run on the restoring thread with the action gate closed: they must not start an
    /// action or block; signal other work instead.
    /// </summary>
    public event EventHandler<long>? Restored;

    /// <summary>The largest payload <see cref="Append"/> accepts, in bytes.</summary>
    public int MaxEntryBytes => _logOptions.MaxEntryBytes;

    /// <summary>
    /// Appends an entry and returns its LSN (its address in the log). Call inside an action. The entry is readable at
    /// once, durable after the next persist of this version, and may still be rolled back until that version commits.
    /// </summary>
    /// <exception cref="ArgumentOutOfRangeException">The entry is longer than <see cref="MaxEntryBytes"/>.</exception>
    public long Append(ReadOnlySpan<byte> entry)
    {
        if (entry.Length > _logOptions.MaxEntryBytes)
        {
            throw new ArgumentOutOfRangeException(nameof(entry), entry.Length, $"SpeculativeLog {Id}: an entry holds at most {_logOptions.MaxEntryBytes} bytes.");
        }

        int frameLength = LogEntryFormat.HeaderSize + entry.Length;
        var frame = ArrayPool<byte>.Shared.Rent(frameLength);
        try
        {
            entry.CopyTo(frame.AsSpan(LogEntryFormat.HeaderSize));
            LogEntryFormat.WriteHeader(frame.AsSpan(0, frameLength), LogRecordKind.Entry);
            var data = entry.ToArray();
            lock (_lock)
            {
                long lsn = _log.Enqueue(new ReadOnlySpan<byte>(frame, 0, frameLength));
                _uncommitted.Add(lsn, (data, _log.TailAddress));
                return lsn;
            }
        }
        finally
        {
            ArrayPool<byte>.Shared.Return(frame);
        }
    }

    /// <summary>
    /// Marks every entry below <paramref name="lsn"/> as no longer needed (call inside an action): reads below it fail at
    /// once, and the space is reclaimed once the version that truncated is committed. A lower value than the current
    /// begin is ignored. Pass an LSN returned by <see cref="Append"/> or a scan (or <see cref="TailLsn"/>).
    /// </summary>
    /// <exception cref="ArgumentOutOfRangeException"><paramref name="lsn"/> is beyond the tail.</exception>
    public void TruncateBefore(long lsn)
    {
        lock (_lock)
        {
            long tail = _log.TailAddress;
            if (lsn > tail)
            {
                throw new ArgumentOutOfRangeException(nameof(lsn), lsn, $"SpeculativeLog {Id}: cannot truncate beyond the tail {tail}.");
            }

            _logicalBegin = Math.Max(_logicalBegin, lsn);
        }
    }

    /// <summary>Reads the entry at <paramref name="lsn"/> (call inside an action), including entries not yet durable.</summary>
    /// <exception cref="ArgumentOutOfRangeException">No entry starts there: truncated, beyond the tail, rolled back, or not an entry (the message says which).</exception>
    /// <exception cref="InvalidDataException">The stored entry is corrupt, or <paramref name="lsn"/> is not the start of an entry.</exception>
    public async ValueTask<ReadOnlyMemory<byte>> ReadAsync(long lsn, CancellationToken cancellationToken = default)
    {
        lock (_lock)
        {
            ThrowIfUnreadable(lsn);
            if (lsn >= _durableUntil)
            {
                return _uncommitted.TryGetValue(lsn, out var cached)
                    ? cached.Data
                    : throw new ArgumentOutOfRangeException(nameof(lsn), lsn, $"SpeculativeLog {Id}: no entry starts at LSN {lsn}.");
            }
        }

        var (kind, bytes, length) = await ReadRecordAsync(lsn, "the entry", cancellationToken).ConfigureAwait(false);
        return kind == LogRecordKind.Entry
            ? bytes.AsMemory(LogEntryFormat.HeaderSize, length - LogEntryFormat.HeaderSize)
            : throw new ArgumentOutOfRangeException(nameof(lsn), lsn, $"SpeculativeLog {Id}: address {lsn} holds a {kind} record, not a user entry.");
    }

    /// <summary>
    /// Returns up to <paramref name="maxEntries"/> user entries from <paramref name="fromLsn"/> on (call inside an action),
    /// in LSN order, including entries not yet durable; rolled-back entries are skipped. Start at 0 (or
    /// <see cref="BeginLsn"/>) or at an LSN or <see cref="SpeculativeLogEntry.NextLsn"/> returned before.
    /// </summary>
    /// <exception cref="ArgumentOutOfRangeException">
    /// <paramref name="maxEntries"/> is not positive, or no record starts at <paramref name="fromLsn"/> (it points inside one).
    /// </exception>
    /// <exception cref="InvalidDataException">A stored entry is corrupt; the message names its address.</exception>
    public async ValueTask<IReadOnlyList<SpeculativeLogEntry>> ScanAsync(long fromLsn, int maxEntries, CancellationToken cancellationToken = default)
    {
        ArgumentOutOfRangeException.ThrowIfNegativeOrZero(maxEntries);
        long from;
        long durable;
        (long From, long Until)[] dropped;
        var tailEntries = new List<SpeculativeLogEntry>();
        bool startUnchecked;
        lock (_lock)
        {
            from = Math.Max(Math.Max(fromLsn, _logicalBegin), _log.BeginAddress);
            durable = _durableUntil;

            // A start the caller chose must be a record's: in memory that is known; in storage the first read says so.
            startUnchecked = from == fromLsn && from > Math.Max(_logicalBegin, _log.BeginAddress);
            if (startUnchecked && from >= durable && from < _log.TailAddress && !_uncommitted.ContainsKey(from))
            {
                throw NoRecordAt(from);
            }

            dropped = [.. _state.Dropped];
            foreach (var (lsn, (data, next)) in _uncommitted)
            {
                if (tailEntries.Count == maxEntries)
                {
                    break;
                }

                if (lsn >= from)
                {
                    tailEntries.Add(new SpeculativeLogEntry(lsn, next, data));
                }
            }
        }

        var result = new List<SpeculativeLogEntry>();
        if (from < durable)
        {
            await ScanDurableAsync(from, durable, maxEntries, dropped, startUnchecked, result, cancellationToken).ConfigureAwait(false);
        }

        for (int i = 0; i < tailEntries.Count && result.Count < maxEntries; i++)
        {
            result.Add(tailEntries[i]);
        }

        return result;
    }

    /// <inheritdoc />
    protected override async ValueTask DisposeAsyncCore()
    {
        try
        {
            await base.DisposeAsyncCore().ConfigureAwait(false);
            _log.Dispose();
        }
        finally
        {
            DisposeStorage(_logOptions, _commitManager, _fences);
        }
    }

    private async ValueTask ScanDurableAsync(long from, long until, int maxEntries, (long From, long Until)[] dropped, bool startUnchecked,
        List<SpeculativeLogEntry> result, CancellationToken cancellationToken)
    {
        if (result.Count >= maxEntries)
        {
            return;
        }

        try
        {
            await foreach (var entry in FasterLogs.ScanAsync(_log, from, until, cancellationToken).ConfigureAwait(false))
            {
                var problem = LogEntryFormat.TryParse(entry.Span, out var kind, out _);
                if (problem is not null)
                {
                    throw startUnchecked && entry.Address == from
                        ? NoRecordAt(from)
                        : new InvalidDataException($"SpeculativeLog {Id}: no valid entry at address {entry.Address}: {problem}.");
                }

                startUnchecked = false;

                if (kind == LogRecordKind.Entry && !IsDropped(dropped, entry.Address))
                {
                    result.Add(new SpeculativeLogEntry(entry.Address, entry.NextAddress, entry.Buffer.AsMemory(LogEntryFormat.HeaderSize, entry.Length - LogEntryFormat.HeaderSize)));
                    if (result.Count >= maxEntries)
                    {
                        return;
                    }
                }
            }
        }
        catch (FasterLogReadException e) when (startUnchecked)
        {
            // The very first read failed at a start the caller chose: it points inside a record, not at one.
            throw NoRecordAt(from, e);
        }
        catch (FasterLogReadException e)
        {
            throw new InvalidDataException($"SpeculativeLog {Id}: FasterLog cannot read the entry at address {e.Address}: {e.InnerException?.Message}", e);
        }
    }

    private ArgumentOutOfRangeException NoRecordAt(long lsn, Exception? cause = null) =>
        new($"SpeculativeLog {Id}: no record starts at LSN {lsn}; scan from 0, from an entry's LSN or from a NextLsn returned before.", cause);

    /// <summary>Throws if no entry can be read at <paramref name="lsn"/> whatever is stored there. Under the lock.</summary>
    private void ThrowIfUnreadable(long lsn)
    {
        if (lsn < _logicalBegin || lsn < _log.BeginAddress)
        {
            throw new ArgumentOutOfRangeException(nameof(lsn), lsn, $"SpeculativeLog {Id}: LSN {lsn} was truncated (the log begins at {Math.Max(_logicalBegin, _log.BeginAddress)}).");
        }

        long tail = _log.TailAddress;
        if (lsn >= tail)
        {
            throw new ArgumentOutOfRangeException(nameof(lsn), lsn, $"SpeculativeLog {Id}: LSN {lsn} is at or beyond the tail {tail}; no entry was appended there.");
        }

        if (IsDropped(CollectionsMarshal.AsSpan(_state.Dropped), lsn))
        {
            throw new ArgumentOutOfRangeException(nameof(lsn), lsn, $"SpeculativeLog {Id}: the entry at LSN {lsn} was rolled back.");
        }
    }

    private static bool IsDropped(ReadOnlySpan<(long From, long Until)> dropped, long address)
    {
        foreach (var (from, until) in dropped)
        {
            if (address >= from && address < until)
            {
                return true;
            }
        }

        return false;
    }

    /// <summary>
    /// Closes the commit manager this log created (<paramref name="commitManager"/>; null if none yet) and, when owned, the
    /// storage, then releases the storage for the next instance.
    /// </summary>
    private static void DisposeStorage(SpeculativeLogOptions logOptions, ILogCommitManager? commitManager, StorageFence[] fences)
    {
        try
        {
            if (logOptions.CommitManager is null)
            {
                commitManager?.Dispose();
            }

            if (logOptions.OwnsStorage)
            {
                logOptions.CommitManager?.Dispose();
                logOptions.LogDevice!.Dispose();
            }
        }
        finally
        {
            // Lock files only: these fences never hold a lease (StorageFence.Acquire takes none).
            foreach (var fence in fences)
            {
                fence.Dispose();
            }
        }
    }

    /// <summary>
    /// Locks the log device's files and the commit directory (in that order), or nothing when the storage need not be
    /// exclusive; in-memory devices and a commit manager of the caller's own hold nothing.
    /// </summary>
    private StorageFence[] AcquireFences(SpeculativeLogOptions logOptions)
    {
        if (!logOptions.ExclusiveStorage)
        {
            return [];
        }

        StorageFence logFence;
        try
        {
            logFence = StorageFence.Acquire(logOptions.LogDevice!, Logger);
        }
        catch (NotSupportedException e)
        {
            throw new ArgumentException(
                $"SpeculativeLog {Id}: {e.Message} This constructor cannot wait for it. Take it before creating the log and hold it " +
                $"until the log is disposed, and set {nameof(SpeculativeLogOptions)}.{nameof(SpeculativeLogOptions.ExclusiveStorage)} to false.",
                nameof(logOptions), e);
        }
        catch (StorageFencedException e)
        {
            throw new StorageFencedException($"SpeculativeLog {Id} cannot open: {e.Message}", e);
        }

        if (logOptions.CommitDirectory is null)
        {
            return [logFence];
        }

        try
        {
            return [logFence, StorageFence.AcquireDirectory(logOptions.CommitDirectory, Logger)];
        }
        catch (StorageFencedException e)
        {
            logFence.Dispose();
            throw new StorageFencedException($"SpeculativeLog {Id} cannot open: {e.Message}", e);
        }
        catch
        {
            logFence.Dispose();
            throw;
        }
    }

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
            ServicesLogMessages.LogRolledBack(Logger, Id, version, dropFrom, dropUntil);
        }

        Interlocked.Increment(ref _restores);
        Restored?.Invoke(this, version);
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
                ServicesLogMessages.LogPruned(Logger, Id, version, begin);
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
        const string What = "the last committed record (the log's committed tail is lost or corrupt)";
        var (kind, _, _) = await ReadRecordAsync(address, What, cancellationToken).ConfigureAwait(false);
        if (kind == LogRecordKind.Entry)
        {
            throw new InvalidDataException($"SpeculativeLog {Id}: {What} at address {address} is a user entry, not a commit record or rollback marker.");
        }
    }

    /// <summary>
    /// Reads and parses the record at <paramref name="address"/>; throws <see cref="InvalidDataException"/>, naming it as
    /// <paramref name="what"/>, when it cannot be read or is not a valid record.
    /// </summary>
    private async ValueTask<(LogRecordKind Kind, byte[] Bytes, int Length)> ReadRecordAsync(long address, string what, CancellationToken cancellationToken)
    {
        (byte[]? bytes, int length) read;
        try
        {
            read = await FasterLogs.ReadAsync(_log, address, 0, cancellationToken).ConfigureAwait(false);
        }
        catch (FasterLogReadException e)
        {
            throw new InvalidDataException($"SpeculativeLog {Id}: {what} at address {address} cannot be read: {e.InnerException?.Message}", e);
        }

        if (read.bytes is null)
        {
            throw new InvalidDataException($"SpeculativeLog {Id}: {what} at address {address} cannot be read from the log device.");
        }

        var problem = LogEntryFormat.TryParse(read.bytes.AsSpan(0, read.length), out var kind, out _);
        return problem is null
            ? (kind, read.bytes, read.length)
            : throw new InvalidDataException($"SpeculativeLog {Id}: {what} at address {address} is not a valid record: {problem}.");
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
            ServicesLogMessages.LogCommitFailed(Logger, Id, version, e);
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
