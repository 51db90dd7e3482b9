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
/// </remarks>
public sealed partial class SpeculativeLog : StateObject
{
    private readonly SpeculativeLogOptions _logOptions;
    private readonly ILogCommitManager _commitManager;
    private readonly FasterLog _log;

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

    /// <summary>Opens (and recovers, if the storage holds a commit) the log; call ConnectAsync next.</summary>
    /// <exception cref="ArgumentException">An option is invalid; the message names it.</exception>
    /// <exception cref="InvalidDataException">The newest commit cannot be recovered.</exception>
    public SpeculativeLog(DseOptions options, SpeculativeLogOptions logOptions)
        : base(options)
    {
        ArgumentNullException.ThrowIfNull(logOptions);
        logOptions.Validate();
        _logOptions = logOptions;
        // FASTER's own manager blocks the committing thread (often a pool thread) on its write: wrapped, the pool makes up for it.
        _commitManager = logOptions.CommitManager ?? new PoolSafeCommitManager(new DeviceLogCommitCheckpointManager(
            new LocalStorageNamedDeviceFactory(), new DefaultCheckpointNamingScheme(Path.GetFullPath(logOptions.CommitDirectory!))));
        var settings = new FasterLogSettings
        {
            LogDevice = logOptions.LogDevice,
            PageSizeBits = logOptions.PageSizeBits,
            MemorySizeBits = logOptions.MemorySizeBits,
            SegmentSizeBits = logOptions.SegmentSizeBits,
            LogCommitManager = _commitManager,
            LogChecksum = LogChecksumType.None,

            // FasterLog swallows errors when recovering on its own; recover explicitly so a bad commit is an error.
            TryRecoverLatest = false,
            AutoCommit = false,
        };
        _log = new FasterLog(settings);
        try
        {
            _state = Recover();
        }
        catch
        {
            _log.Dispose();
            DisposeStorage();
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

        var (bytes, length) = await _log.ReadAsync(lsn, 0, cancellationToken).ConfigureAwait(false);
        if (bytes is null)
        {
            throw new InvalidDataException($"SpeculativeLog {Id}: the entry at address {lsn} cannot be read from the log device.");
        }

        var problem = LogEntryFormat.TryParse(bytes.AsSpan(0, length), out var kind, out _);
        if (problem is not null)
        {
            throw new InvalidDataException($"SpeculativeLog {Id}: no valid entry at address {lsn}: {problem}.");
        }

        return kind == LogRecordKind.Entry
            ? bytes.AsMemory(LogEntryFormat.HeaderSize, length - LogEntryFormat.HeaderSize)
            : throw new ArgumentOutOfRangeException(nameof(lsn), lsn, $"SpeculativeLog {Id}: address {lsn} holds a {kind} record, not a user entry.");
    }

    /// <summary>
    /// Returns up to <paramref name="maxEntries"/> user entries from <paramref name="fromLsn"/> on (call inside an action),
    /// in LSN order, including entries not yet durable; rolled-back entries are skipped. Start at 0 (or
    /// <see cref="BeginLsn"/>) or at an LSN or <see cref="SpeculativeLogEntry.NextLsn"/> returned before.
    /// </summary>
    /// <exception cref="ArgumentOutOfRangeException"><paramref name="maxEntries"/> is not positive.</exception>
    /// <exception cref="InvalidDataException">A stored entry is corrupt; the message names its address.</exception>
    public async ValueTask<IReadOnlyList<SpeculativeLogEntry>> ScanAsync(long fromLsn, int maxEntries, CancellationToken cancellationToken = default)
    {
        ArgumentOutOfRangeException.ThrowIfNegativeOrZero(maxEntries);
        long from;
        long durable;
        (long From, long Until)[] dropped;
        var tailEntries = new List<SpeculativeLogEntry>();
        lock (_lock)
        {
            from = Math.Max(Math.Max(fromLsn, _logicalBegin), _log.BeginAddress);
            durable = _durableUntil;
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
            await ScanDurableAsync(from, durable, maxEntries, dropped, result, cancellationToken).ConfigureAwait(false);
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
        await base.DisposeAsyncCore().ConfigureAwait(false);
        _log.Dispose();
        DisposeStorage();
    }

    private async ValueTask ScanDurableAsync(long from, long until, int maxEntries, (long From, long Until)[] dropped, List<SpeculativeLogEntry> result, CancellationToken cancellationToken)
    {
        using var iterator = _log.Scan(from, until, name: null, recover: false);
        long address = from;
        while (result.Count < maxEntries)
        {
            byte[] bytes;
            int length;
            long next;
            try
            {
                if (!iterator.GetNext(out bytes, out length, out address, out next))
                {
                    if (await iterator.WaitAsync(cancellationToken).ConfigureAwait(false))
                    {
                        continue;
                    }

                    return;
                }
            }
            catch (Exception e) when (e is FasterException or IndexOutOfRangeException or ArgumentException or OverflowException)
            {
                throw new InvalidDataException($"SpeculativeLog {Id}: FasterLog cannot read the entry at address {address}: {e.Message}", e);
            }

            var problem = LogEntryFormat.TryParse(bytes.AsSpan(0, length), out var kind, out _);
            if (problem is not null)
            {
                throw new InvalidDataException($"SpeculativeLog {Id}: no valid entry at address {address}: {problem}.");
            }

            if (kind == LogRecordKind.Entry && !IsDropped(dropped, address))
            {
                result.Add(new SpeculativeLogEntry(address, next, bytes.AsMemory(LogEntryFormat.HeaderSize, length - LogEntryFormat.HeaderSize)));
            }
        }
    }

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

    private void DisposeStorage()
    {
        if (_logOptions.CommitManager is null)
        {
            _commitManager.Dispose();
        }

        if (_logOptions.OwnsStorage)
        {
            _logOptions.CommitManager?.Dispose();
            _logOptions.LogDevice!.Dispose();
        }
    }
}
