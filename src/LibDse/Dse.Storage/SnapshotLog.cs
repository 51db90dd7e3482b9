using System.Collections.Immutable;
using System.Diagnostics;
using FASTER.core;
using Microsoft.Extensions.Logging;
using Microsoft.Extensions.Logging.Abstractions;
using static Dse.Storage.SnapshotRecordFormat;

namespace Dse.Storage;

/// <summary>
/// An append-only log of checksummed records directly on an <see cref="IDevice"/>, for state objects that persist
/// whole snapshots. Opening it recovers every valid record; an append completes once the device acknowledged it.
/// </summary>
/// <remarks>
/// <para>Appends are serialized: each record is written, and acknowledged, before the next one starts, so a crash can
/// only tear the last record. Recovery drops such a torn tail silently and reports any other damage (an invalid record
/// followed by a valid one, or a nonzero sector that is not a record header) as <see cref="InvalidDataException"/>.</para>
/// <para><see cref="DropAfterAsync"/> and <see cref="TruncateBeforeAsync"/> append markers rather than rewrite the log:
/// recovery replays them, so they are exactly as durable as appends. Space is not reclaimed.</para>
/// <para>An append that fails (the device reported an error) leaves the log unchanged in memory, and the next append
/// overwrites the same place; whether the failed record survives a crash before that is undefined, as with any write
/// whose outcome is unknown. The on-device format is specified in docs/storage-format.md.</para>
/// <para>One instance owns the storage, from open to dispose (<see cref="SnapshotLogOptions.ExclusiveStorage"/>, a
/// <see cref="StorageFence"/>): on local files a second open of the same files, in this process or another, fails with
/// a <see cref="StorageFencedException"/> naming the lock file; on page blobs the new instance takes the storage over,
/// and the old one's appends fail with a <see cref="StorageFencedException"/>.</para>
/// </remarks>
public sealed class SnapshotLog : IAsyncDisposable
{
    private readonly IDevice _device;
    private readonly int _maxPayloadLength;
    private readonly bool _ownsDevice;
    private readonly ILogger _logger;
    private readonly int _sectorSize;

    /// <summary>Exclusive ownership of the device's storage from open to dispose; <see langword="null"/> when not asked for.</summary>
    private readonly StorageFence? _fence;

    /// <summary>Serializes appends and disposal; held from a record's write until its acknowledgement.</summary>
    private readonly SemaphoreSlim _appendLock = new(1, 1);

    /// <summary>Address where the next record goes; guarded by <see cref="_appendLock"/>, read without it only for <see cref="TailAddress"/>.</summary>
    private long _tailAddress;

    /// <summary>Sequence number of the next record; guarded by <see cref="_appendLock"/>.</summary>
    private ulong _nextSequence;

    /// <summary>Live records, replaced (never mutated) under <see cref="_appendLock"/>.</summary>
    private volatile ImmutableList<SnapshotRecord> _records = ImmutableList<SnapshotRecord>.Empty;

    private int _disposed;

    private SnapshotLog(IDevice device, SnapshotLogOptions options, StorageFence? fence, ILogger logger)
    {
        _device = device;
        _fence = fence;
        _maxPayloadLength = options.MaxPayloadLength;
        _ownsDevice = options.OwnsDevice;
        _logger = logger;
        _sectorSize = (int)device.SectorSize;
    }

    /// <summary>The live records in append order, after applying every drop and truncate marker (an immutable snapshot).</summary>
    public IReadOnlyList<SnapshotRecord> Records => _records;

    /// <summary>The most recently appended live record, or <see langword="null"/> when there is none.</summary>
    public SnapshotRecord? Latest
    {
        get
        {
            var records = _records;
            return records.Count == 0 ? null : records[^1];
        }
    }

    /// <summary>The device address where the next record will be written (the end of the valid log).</summary>
    public long TailAddress => Interlocked.Read(ref _tailAddress);

    /// <summary>The device the log is on.</summary>
    public IDevice Device => _device;

    /// <summary>Opens the log on a device and recovers its records.</summary>
    /// <param name="device">The device; an empty one starts an empty log.</param>
    /// <param name="options">Log options; <see langword="null"/> for the defaults.</param>
    /// <param name="logger">Receives recovery information; <see langword="null"/> for none.</param>
    /// <param name="cancellationToken">Cancels the recovery scan.</param>
    /// <returns>The opened log, positioned after its last valid record.</returns>
    /// <exception cref="InvalidDataException">The log is corrupt before its tail; the message names the address.</exception>
    /// <exception cref="StorageFencedException">Another instance owns the storage (a local lock file is held); nothing was read or written.</exception>
    /// <exception cref="IOException">The device failed a read.</exception>
    public static async Task<SnapshotLog> OpenAsync(IDevice device, SnapshotLogOptions? options = null, ILogger? logger = null,
        CancellationToken cancellationToken = default)
    {
        ArgumentNullException.ThrowIfNull(device);
        options ??= new SnapshotLogOptions();
        options.Validate();
        if (device.SectorSize < SnapshotRecordFormat.HeaderSize || !uint.IsPow2(device.SectorSize) || device.SectorSize > AlignedBuffer.Alignment)
        {
            throw new ArgumentException(
                $"Device '{device.FileName}' has sector size {device.SectorSize}; a snapshot log needs a power of two between " +
                $"{SnapshotRecordFormat.HeaderSize} and {AlignedBuffer.Alignment}.", nameof(device));
        }

        logger ??= NullLogger.Instance;

        // Owned before anything is read: another instance's appends are either refused or all seen by the recovery.
        StorageFence? fence = null;
        if (options.ExclusiveStorage)
        {
            try
            {
                fence = await StorageFence.AcquireAsync(device, logger, cancellationToken).ConfigureAwait(false);
            }
            catch (StorageFencedException e)
            {
                throw new StorageFencedException($"Snapshot log cannot open: {e.Message}", e);
            }
        }

        try
        {
            if (options.InitializeDevice)
            {
                device.Initialize(options.SegmentSize, null, false);
            }

            var log = new SnapshotLog(device, options, fence, logger);
            await log.RecoverAsync(cancellationToken).ConfigureAwait(false);
            return log;
        }
        catch
        {
            if (fence is not null)
            {
                await fence.DisposeAsync().ConfigureAwait(false);
            }

            throw;
        }
    }

    /// <summary>Appends a record; completes when the device has acknowledged it.</summary>
    /// <param name="key">The record's key; drop and truncate markers select records by it.</param>
    /// <param name="payload">The payload; copied before this method returns.</param>
    /// <param name="cancellationToken">Cancels waiting for earlier appends; a write already issued is not cancelled.</param>
    /// <exception cref="ArgumentException">The payload exceeds <see cref="SnapshotLogOptions.MaxPayloadLength"/>.</exception>
    /// <exception cref="IOException">The device reported an error; the record is not in <see cref="Records"/>.</exception>
    /// <exception cref="ObjectDisposedException">The log was disposed.</exception>
    public ValueTask AppendAsync(ulong key, ReadOnlySpan<byte> payload, CancellationToken cancellationToken = default)
    {
        ObjectDisposedException.ThrowIf(Volatile.Read(ref _disposed) != 0, this);
        if (payload.Length > _maxPayloadLength)
        {
            throw new ArgumentException(
                $"The payload has {payload.Length} bytes; the limit is {_maxPayloadLength} (SnapshotLogOptions.MaxPayloadLength).",
                nameof(payload));
        }

        var pending = new PendingRecord(SnapshotRecordKind.Data, key, payload, _sectorSize);
        return AppendCoreAsync(pending, cancellationToken);
    }

    /// <summary>Appends a record; completes when the device has acknowledged it.</summary>
    /// <param name="key">The record's key; drop and truncate markers select records by it.</param>
    /// <param name="payload">The payload; copied before this method returns.</param>
    /// <param name="cancellationToken">Cancels waiting for earlier appends; a write already issued is not cancelled.</param>
    /// <exception cref="ArgumentException">The payload exceeds <see cref="SnapshotLogOptions.MaxPayloadLength"/>.</exception>
    /// <exception cref="IOException">The device reported an error; the record is not in <see cref="Records"/>.</exception>
    /// <exception cref="ObjectDisposedException">The log was disposed.</exception>
    public ValueTask AppendAsync(ulong key, ReadOnlyMemory<byte> payload, CancellationToken cancellationToken = default)
        => AppendAsync(key, payload.Span, cancellationToken);

    /// <summary>
    /// Drops every live record whose key is greater than <paramref name="key"/>, durably: a marker is appended, and
    /// recovery ignores records with a greater key that precede it. Records appended later are unaffected.
    /// Nothing is written when no live record has a greater key.
    /// </summary>
    /// <param name="key">The greatest key to keep.</param>
    /// <param name="cancellationToken">Cancels waiting for earlier appends.</param>
    public ValueTask DropAfterAsync(ulong key, CancellationToken cancellationToken = default)
    {
        ObjectDisposedException.ThrowIf(Volatile.Read(ref _disposed) != 0, this);
        return AppendCoreAsync(new PendingRecord(SnapshotRecordKind.DropAfter, key, [], _sectorSize), cancellationToken);
    }

    /// <summary>
    /// Drops every live record whose key is less than <paramref name="key"/>, durably, by appending a marker
    /// (space on the device is not reclaimed). Nothing is written when no live record has a smaller key.
    /// </summary>
    /// <param name="key">The smallest key to keep.</param>
    /// <param name="cancellationToken">Cancels waiting for earlier appends.</param>
    public ValueTask TruncateBeforeAsync(ulong key, CancellationToken cancellationToken = default)
    {
        ObjectDisposedException.ThrowIf(Volatile.Read(ref _disposed) != 0, this);
        return AppendCoreAsync(new PendingRecord(SnapshotRecordKind.TruncateBefore, key, [], _sectorSize), cancellationToken);
    }

    /// <summary>
    /// Waits for an append in flight, then closes the log (and disposes the device when it is owned) and releases the
    /// storage, last, for the next instance.
    /// </summary>
    public async ValueTask DisposeAsync()
    {
        if (Interlocked.Exchange(ref _disposed, 1) != 0)
        {
            return;
        }

        try
        {
            await _appendLock.WaitAsync().ConfigureAwait(false);
            try
            {
                if (_ownsDevice)
                {
                    _device.Dispose();
                }
            }
            finally
            {
                _appendLock.Release();
            }
        }
        finally
        {
            if (_fence is not null)
            {
                await _fence.DisposeAsync().ConfigureAwait(false);
            }
        }
    }

    /// <summary>
    /// Releases what the process's death would release (a local lock file) and nothing else: for in-process tests that
    /// abandon this instance as a crash and open the same storage again. Page blob leases stay, as after a crash.
    /// </summary>
    internal void ReleaseFenceAsProcessExitWould()
    {
        if (_fence is { ReleasedByProcessExit: true })
        {
            _fence.Dispose();
        }
    }

    /// <summary>Applies a record or marker to a list of live records.</summary>
    private static ImmutableList<SnapshotRecord> Apply(ImmutableList<SnapshotRecord> records, SnapshotRecordKind kind, SnapshotRecord record)
        => kind switch
        {
            SnapshotRecordKind.Data => records.Add(record),
            SnapshotRecordKind.DropAfter => records.RemoveAll(r => r.Key > record.Key),
            _ => records.RemoveAll(r => r.Key < record.Key),
        };

    private static bool Affects(ImmutableList<SnapshotRecord> records, SnapshotRecordKind kind, ulong key)
    {
        foreach (var record in records)
        {
            if (kind == SnapshotRecordKind.DropAfter ? record.Key > key : record.Key < key)
            {
                return true;
            }
        }

        return false;
    }

    private async ValueTask AppendCoreAsync(PendingRecord pending, CancellationToken cancellationToken)
    {
        using (pending)
        {
            await _appendLock.WaitAsync(cancellationToken).ConfigureAwait(false);
            try
            {
                ObjectDisposedException.ThrowIf(Volatile.Read(ref _disposed) != 0, this);
                if (pending.Kind != SnapshotRecordKind.Data && !Affects(_records, pending.Kind, pending.Key))
                {
                    return;
                }

                ThrowIfFenced();
                long address = _tailAddress;
                ulong sequence = _nextSequence;
                Debug.Assert(_appendLock.CurrentCount == 0, "appends run under the append lock");
                Debug.Assert(address % _sectorSize == 0, "records start on sector boundaries");
                pending.Seal(sequence, address);

                // The record and one zero sector after it (the end-of-log terminator) go out together, the header last.
                try
                {
                    await DeviceIo.WriteFirstPartLastAsync(_device, address, pending.Buffer.Pointer, pending.WriteLength).ConfigureAwait(false);
                }
                catch (IOException e) when (_fence is { IsLost: true })
                {
                    throw _fence.LostException(Owner, e);
                }

                var record = new SnapshotRecord(pending.Key, sequence, address, pending.Payload);
                _records = Apply(_records, pending.Kind, record);
                _nextSequence = sequence + 1;
                Interlocked.Exchange(ref _tailAddress, address + pending.RecordLength);
            }
            finally
            {
                _appendLock.Release();
            }
        }
    }

    /// <summary>
    /// Scans records from address 0. Every acknowledged record is followed on the device by the next record or by a
    /// zero sector, and a record's header sector is written last, so at the first position after the valid records the
    /// scan finds zeros (the clean end), a valid header whose payload is torn (dropped), or damage (reported).
    /// </summary>
    private async Task RecoverAsync(CancellationToken cancellationToken)
    {
        var records = ImmutableList.CreateBuilder<SnapshotRecord>();
        long address = 0;
        ulong sequence = 0;
        var buffer = new AlignedBuffer(_sectorSize);
        try
        {
            while (true)
            {
                cancellationToken.ThrowIfCancellationRequested();
                var (status, header, problem) = await ProbeAsync(buffer, address, sequence).ConfigureAwait(false);
                if (status == HeaderStatus.Empty)
                {
                    break;
                }

                if (status == HeaderStatus.Invalid)
                {
                    throw Corrupt(address, $"the sector at this address is neither zero nor a valid record header: {problem}");
                }

                long recordLength = RecordLength(header.PayloadLength, _sectorSize);
                if (buffer.Length < recordLength)
                {
                    // Grow, keeping the header sector that was just read.
                    var larger = new AlignedBuffer(checked((int)recordLength));
                    buffer.Span[.._sectorSize].CopyTo(larger.Span);
                    buffer.Dispose();
                    buffer = larger;
                }

                string? tear = await ReadPayloadAsync(buffer, header, recordLength).ConfigureAwait(false);
                if (tear is not null)
                {
                    // Torn, unless a valid record follows: then this one had been acknowledged and was damaged later.
                    long next = address + recordLength;
                    var (nextStatus, _, _) = await ProbeAsync(buffer, next, sequence + 1).ConfigureAwait(false);
                    if (nextStatus == HeaderStatus.Valid)
                    {
                        throw Corrupt(address, $"record (sequence {sequence}, key {header.Key}) {tear}, yet a valid record follows at address {next}");
                    }

                    StorageLogMessages.SnapshotLogTornTail(_logger, _device.FileName, address, sequence, tear);
                    break;
                }

                var payload = buffer.Span.Slice(HeaderSize, header.PayloadLength).ToArray();
                var record = new SnapshotRecord(header.Key, sequence, address, payload);
                switch (header.Kind)
                {
                    case SnapshotRecordKind.Data:
                        records.Add(record);
                        break;
                    case SnapshotRecordKind.DropAfter:
                        records.RemoveAll(r => r.Key > header.Key);
                        break;
                    default:
                        records.RemoveAll(r => r.Key < header.Key);
                        break;
                }

                address += recordLength;
                sequence++;
            }
        }
        finally
        {
            buffer.Dispose();
        }

        _records = records.ToImmutable();
        _nextSequence = sequence;
        _tailAddress = address;
        StorageLogMessages.SnapshotLogRecovered(_logger, _device.FileName, _records.Count, sequence, address);
    }

    /// <summary>Reads the sector at <paramref name="address"/> into <paramref name="buffer"/> and classifies it.</summary>
    private async Task<(HeaderStatus Status, RecordHeader Header, string Problem)> ProbeAsync(AlignedBuffer buffer, long address, ulong sequence)
    {
        int read = await DeviceIo.ReadAsync(_device, address, buffer.Pointer, _sectorSize).ConfigureAwait(false);
        var status = ParseHeader(buffer.Span[..read], address, sequence, out var header, out string problem);
        return (status, header, problem);
    }

    /// <summary>Reads the whole record into <paramref name="buffer"/>; returns why it is torn, or <see langword="null"/> when it is intact.</summary>
    private async Task<string?> ReadPayloadAsync(AlignedBuffer buffer, RecordHeader header, long recordLength)
    {
        // The header sector is already in the buffer; fetch the remaining sectors.
        if (recordLength > _sectorSize)
        {
            int rest = (int)(recordLength - _sectorSize);
            int read = await DeviceIo.ReadAsync(_device, header.Address + _sectorSize, buffer.Pointer + _sectorSize, rest).ConfigureAwait(false);
            if (read < rest)
            {
                return $"is incomplete: only {_sectorSize + read} of its {recordLength} bytes are on the device";
            }
        }

        return PayloadMatches(header, buffer.Span.Slice(HeaderSize, header.PayloadLength))
            ? null
            : "fails its payload checksum";
    }

    private string Owner => $"Snapshot log on device '{_device.FileName}'";

    /// <summary>Refuses an append once another instance took the storage over (a broken page blob lease).</summary>
    private void ThrowIfFenced()
    {
        if (_fence is { CanBeLost: true, IsLost: true })
        {
            throw _fence.LostException(Owner);
        }
    }

    private InvalidDataException Corrupt(long address, string detail)
        => new($"Snapshot log on device '{_device.FileName}' is corrupt at address {address} (0x{address:X}): {detail}.");

    /// <summary>A record staged for writing: its sector-aligned image (header, payload, padding, terminator) in native memory.</summary>
    private sealed class PendingRecord : IDisposable
    {
        public PendingRecord(SnapshotRecordKind kind, ulong key, ReadOnlySpan<byte> payload, int sectorSize)
        {
            Kind = kind;
            Key = key;
            Payload = payload.ToArray();
            RecordLength = SnapshotRecordFormat.RecordLength(payload.Length, sectorSize);
            WriteLength = checked((int)(RecordLength + sectorSize));
            Buffer = new AlignedBuffer(WriteLength);
            payload.CopyTo(Buffer.Span[SnapshotRecordFormat.HeaderSize..]);
        }

        public SnapshotRecordKind Kind { get; }

        public ulong Key { get; }

        public byte[] Payload { get; }

        public long RecordLength { get; }

        public int WriteLength { get; }

        public AlignedBuffer Buffer { get; }

        public void Seal(ulong sequence, long address)
            => SnapshotRecordFormat.WriteHeader(Buffer.Span, Kind, Key, sequence, address, Payload.Length);

        public void Dispose() => Buffer.Dispose();
    }
}
