using System.Buffers.Binary;
using System.Diagnostics;
using System.IO.Hashing;
using System.Runtime.InteropServices;
using Dse.Storage;
using FASTER.core;
using Microsoft.Extensions.Logging;

namespace Dse.Darq;

/// <summary>
/// FasterLog's commit manager for a DARQ: keeps the two newest commit records in two alternating slots on a device, so
/// that a torn commit write always leaves the previous commit intact. Layout in docs/darq-format.md.
/// </summary>
/// <remarks>
/// <para>FasterLog calls <see cref="Commit"/> synchronously from its serial commit worker, after the log data of that
/// commit has been flushed; the device write therefore blocks that worker until the device acknowledges it (FASTER's own
/// device commit manager does the same). Commits never run concurrently with each other.</para>
/// <para><see cref="Commit"/> must not throw: FasterLog's commit worker swallows the exception and that commit (and
/// every waiter on it) never completes. A failed slot write is therefore retried with backoff until it succeeds or the
/// DARQ closes. From the <see cref="PersistentFailureAttempts"/>th failed attempt in a row on, every failed attempt
/// faults the current <see cref="Failure"/> task (and installs a fresh one), so that callers waiting for a commit get a
/// clear exception instead of waiting for the device forever, and a caller that starts waiting during an outage learns
/// the outcome of the next attempt.</para>
/// <para>A write the device refuses as <see cref="DeviceErrorCodes.Fenced"/> (another instance took the storage over) is
/// not retried: it faults <see cref="Failure"/> with a <see cref="StorageFencedException"/> at once.</para>
/// </remarks>
internal sealed class DarqCommitManager : ILogCommitManager
{
    public const uint Magic = 0x4D43_5144; // "DQCM" little-endian
    public const ushort Version = 1;
    public const int HeaderSize = 64;
    private const int HashedHeaderBytes = 56;
    private const int Alignment = 4096;

    /// <summary>Failed attempts in a row after which a commit-record write counts as persistently failing (about 0.25 s of backoff).</summary>
    public const int PersistentFailureAttempts = 8;

    private static readonly TimeSpan FirstRetryDelay = TimeSpan.FromMilliseconds(1);
    private static readonly TimeSpan MaxRetryDelay = TimeSpan.FromSeconds(1);

    private readonly IDevice _device;
    private readonly bool _ownsDevice;
    private readonly ILogger _logger;
    private readonly string _darqName;
    private readonly int _sectorSize;
    private readonly int _slotSize;
    private readonly int _maxMetadataBytes;

    /// <summary>Valid commits by number (at most the two newest); guarded by locking the dictionary.</summary>
    private readonly SortedDictionary<long, byte[]> _commits = [];

    /// <summary>Cancelled when the DARQ closes: a commit-record write still failing then gives up.</summary>
    private readonly CancellationTokenSource _closing = new();

    /// <summary>The slot the next commit goes to (0 or 1); only the serial commit worker touches it after open.</summary>
    private int _nextSlot;

    /// <summary>
    /// Faulted by the next failed commit-record write attempt once failures are persistent, and then replaced by a fresh
    /// one. Written only by the serial commit worker.
    /// </summary>
    private volatile TaskCompletionSource _failure = new(TaskCreationOptions.RunContinuationsAsynchronously);

    private DarqCommitManager(IDevice device, int maxMetadataBytes, bool ownsDevice, ILogger logger, string darqName)
    {
        _device = device;
        _ownsDevice = ownsDevice;
        _logger = logger;
        _darqName = darqName;
        _sectorSize = (int)device.SectorSize;
        _maxMetadataBytes = maxMetadataBytes;
        _slotSize = SlotSizeFor(maxMetadataBytes);
        Debug.Assert(_sectorSize <= Alignment, "the sector size was checked at open, so slots rounded to 4 KiB are whole sectors");
    }

    /// <summary>
    /// The slot size for a metadata capacity: header and metadata rounded up to 4 KiB (a commit device's sector size is at
    /// most that, checked at open), so the same on every device.
    /// </summary>
    internal static int SlotSizeFor(int maxMetadataBytes) => RoundUp(HeaderSize + maxMetadataBytes, Alignment);

    /// <summary>The number of the newest valid commit, or -1 when there is none.</summary>
    public long LatestCommit
    {
        get
        {
            lock (_commits)
            {
                return _commits.Count == 0 ? -1 : _commits.Keys.Max();
            }
        }
    }

    /// <summary>
    /// Completes only by faulting, with an <see cref="IOException"/>, when a commit-record write attempt fails after
    /// failures became persistent (or the DARQ closes with a commit unwritten); a caller waiting for a commit takes this
    /// task when it starts waiting and races against it.
    /// </summary>
    public Task Failure => _failure.Task;

    /// <summary>Opens the manager on a device and reads both slots.</summary>
    /// <param name="device">The commit device.</param>
    /// <param name="maxMetadataBytes">The largest commit metadata; sizes the slots.</param>
    /// <param name="legacyMaxMetadataBytes">
    /// The metadata capacity an earlier revision sized the slots with (0: none): its second slot is also looked for there,
    /// so that a commit device written with smaller slots still opens at its newest commit.
    /// </param>
    /// <param name="ownsDevice">Whether disposing the manager disposes the device.</param>
    /// <param name="logger">Logs torn slots and failed writes.</param>
    /// <param name="darqName">The DARQ's name, for messages.</param>
    /// <exception cref="DarqCommitSlotSizeMismatchException">
    /// A record on the device states another slot size than <paramref name="maxMetadataBytes"/> gives (see
    /// <see cref="FindForeignSlotSize"/>); nothing was written.
    /// </exception>
    public static async Task<DarqCommitManager> OpenAsync(IDevice device, int maxMetadataBytes, int legacyMaxMetadataBytes, bool ownsDevice, ILogger logger,
        string darqName)
    {
        if (device.SectorSize > Alignment || !uint.IsPow2(device.SectorSize))
        {
            throw new ArgumentException($"Commit device '{device.FileName}' has sector size {device.SectorSize}; DARQ needs a power of two up to {Alignment}.");
        }

        var manager = new DarqCommitManager(device, maxMetadataBytes, ownsDevice, logger, darqName);
        device.Initialize(1L << 40);
        int slotSize = manager._slotSize;
        int legacySlotSize = legacyMaxMetadataBytes > 0 ? SlotSizeFor(legacyMaxMetadataBytes) : slotSize;

        // Both slots in one buffer: [0, 2S) also holds the second slot of any layout with slots smaller than 2S, where a
        // record written with another MaxProducers is looked for before any commit is taken (FindForeignSlotSize).
        int regionLength = 2 * slotSize;
        var region = Allocate(regionLength);
        try
        {
            await manager.ReadSlotRegionAsync(region, 0, slotSize).ConfigureAwait(false);
            await manager.ReadSlotRegionAsync(region + slotSize, 1, slotSize).ConfigureAwait(false);
            if (FindForeignSlotSize(AsSpan(region, regionLength), slotSize, legacySlotSize) is { } foreign)
            {
                throw new DarqCommitSlotSizeMismatchException(foreign.SlotSize, slotSize,
                    $"DARQ '{darqName}': its commit records were written with {foreign.SlotSize}-byte slots (the record at offset " +
                    $"{foreign.Offset} of commit device '{device.FileName}' says so), but this open sizes them at {slotSize} bytes; the size " +
                    "follows from DarqOptions.MaxProducers. Open it with the MaxProducers it was created with; nothing was changed.");
            }

            long newestSlotCommit = -1;
            var candidates = new List<(int Slot, int SlotSize)> { (0, slotSize), (1, slotSize) };
            if (legacySlotSize != slotSize)
            {
                // Written with smaller slots: its second slot starts elsewhere (inside the first slot of this layout). A
                // stale record found there is older than anything written since, so the newest valid commit still wins.
                candidates.Add((1, legacySlotSize));
            }

            foreach (var (slot, size) in candidates)
            {
                // A slot of size S at offset slot * S; both layouts' slots lie inside [0, 2S).
                var (commitNum, metadata) = manager.ParseSlot(AsSpan(region + (slot * size), size), slot, size);
                if (metadata is null)
                {
                    continue;
                }

                manager._commits[commitNum] = metadata;
                if (commitNum > newestSlotCommit)
                {
                    newestSlotCommit = commitNum;
                    manager._nextSlot = 1 - slot;
                }
            }
        }
        finally
        {
            Free(region);
        }

        // At most the two newest commits are kept.
        while (manager._commits.Count > 2)
        {
            manager._commits.Remove(manager._commits.Keys.First());
        }

        return manager;
    }

    /// <summary>
    /// Looks for a record written with another slot size than <paramref name="slotSize"/> in the bytes of both slots:
    /// the offset and the slot size it states, or <see langword="null"/> when every record fits this layout.
    /// </summary>
    /// <remarks>
    /// <para>A record states the slot size it was written with (revision 4; 0 before), and its header has a checksum of its
    /// own, so a header that checks out tells the layout even when the metadata after it is torn. The first slot is at
    /// offset 0 in every layout, so its header decides when it states a size.</para>
    /// <para>When it states none (empty, damaged, or revision 3), the second slot of the layout the device was written with
    /// is looked for: a layout of slot size <c>X</c> has it at offset <c>X</c>, a multiple of 4 KiB, so every 4 KiB
    /// boundary in <paramref name="region"/> is a candidate, and a record there that states exactly its own offset as its
    /// slot size is one. Bytes inside a record found at a slot start (its metadata) are not candidates. A layout whose
    /// second slot lies at or past the end of <paramref name="region"/> (slots of <c>2S</c> or more) is not found.</para>
    /// </remarks>
    /// <param name="region">The device's bytes <c>[0, 2S)</c>, zeros where nothing was written.</param>
    /// <param name="slotSize">This open's slot size <c>S</c>.</param>
    /// <param name="legacySlotSize">Where a revision-3 second slot may be (equal to <paramref name="slotSize"/> when none).</param>
    internal static (int Offset, int SlotSize)? FindForeignSlotSize(ReadOnlySpan<byte> region, int slotSize, int legacySlotSize)
    {
        Debug.Assert(region.Length % Alignment == 0, "the region is whole 4 KiB blocks");
        if (TryReadHeader(region, out int firstSlotSize, out _) && firstSlotSize != 0)
        {
            return firstSlotSize == slotSize ? null : (0, firstSlotSize);
        }

        // Past the end of the last record found at a slot start: its metadata could hold anything.
        long claimedUntil = 0;
        for (int offset = 0; offset + HeaderSize <= region.Length; offset += Alignment)
        {
            if (offset < claimedUntil || !TryReadHeader(region[offset..], out int recorded, out int length))
            {
                continue;
            }

            bool slotStart = offset == 0 || offset == slotSize || offset == legacySlotSize || recorded == offset;
            if (!slotStart)
            {
                continue;
            }

            if (recorded != 0 && recorded == offset && recorded != slotSize)
            {
                return (offset, recorded);
            }

            claimedUntil = offset + (long)HeaderSize + length;
        }

        return null;
    }

    /// <summary>
    /// Reads a record's header at the start of <paramref name="bytes"/> when its magic, version and header checksum hold
    /// (whatever the metadata after it): the slot size it states and its metadata length.
    /// </summary>
    private static bool TryReadHeader(ReadOnlySpan<byte> bytes, out int slotSize, out int metadataLength)
    {
        slotSize = 0;
        metadataLength = 0;
        if (bytes.Length < HeaderSize
            || BinaryPrimitives.ReadUInt32LittleEndian(bytes) != Magic
            || BinaryPrimitives.ReadUInt16LittleEndian(bytes[4..]) != Version
            || BinaryPrimitives.ReadUInt64LittleEndian(bytes[HashedHeaderBytes..]) != XxHash64.HashToUInt64(bytes[..HashedHeaderBytes]))
        {
            return false;
        }

        slotSize = BinaryPrimitives.ReadInt32LittleEndian(bytes[48..]);
        metadataLength = Math.Max(0, BinaryPrimitives.ReadInt32LittleEndian(bytes[16..]));
        return true;
    }

    /// <inheritdoc />
    /// <remarks>Never throws while the DARQ is open: a failed write is retried (see the type's remarks).</remarks>
    public unsafe void Commit(long beginAddress, long untilAddress, byte[] commitMetadata, long commitNum, bool forceWriteMetadata)
    {
        if (commitMetadata.Length > _maxMetadataBytes)
        {
            // Cannot happen with DarqOptions.MaxProducers bounding the cookie; retrying would not help.
            var tooLarge = new InvalidOperationException(
                $"DARQ '{_darqName}': commit metadata of {commitMetadata.Length} bytes exceeds the slot capacity of {_maxMetadataBytes} bytes.");
            Fail(tooLarge);
            throw tooLarge;
        }

        int length = RoundUp(HeaderSize + commitMetadata.Length, _sectorSize);
        var buffer = (byte*)NativeMemory.AlignedAlloc((nuint)length, Alignment);
        try
        {
            var span = new Span<byte>(buffer, length);
            span.Clear();
            commitMetadata.CopyTo(span[HeaderSize..]);
            BinaryPrimitives.WriteUInt32LittleEndian(span, Magic);
            BinaryPrimitives.WriteUInt16LittleEndian(span[4..], Version);
            BinaryPrimitives.WriteInt64LittleEndian(span[8..], commitNum);
            BinaryPrimitives.WriteInt32LittleEndian(span[16..], commitMetadata.Length);
            BinaryPrimitives.WriteInt64LittleEndian(span[24..], beginAddress);
            BinaryPrimitives.WriteInt64LittleEndian(span[32..], untilAddress);
            BinaryPrimitives.WriteUInt64LittleEndian(span[40..], XxHash64.HashToUInt64(commitMetadata));
            BinaryPrimitives.WriteInt32LittleEndian(span[48..], _slotSize);
            BinaryPrimitives.WriteUInt64LittleEndian(span[HashedHeaderBytes..], XxHash64.HashToUInt64(span[..HashedHeaderBytes]));

            int slot = _nextSlot;
            WriteWithRetry((IntPtr)buffer, slot, (uint)length, commitNum);
            _nextSlot = 1 - slot;
            lock (_commits)
            {
                _commits[commitNum] = commitMetadata;
                while (_commits.Count > 2)
                {
                    _commits.Remove(_commits.Keys.Min());
                }
            }
        }
        finally
        {
            NativeMemory.AlignedFree(buffer);
        }
    }

    /// <summary>
    /// Stops retrying: a commit-record write still failing gives up (its commit never completes, and <see cref="Failure"/>
    /// faults), so that FasterLog's commit worker is free before the log is disposed.
    /// </summary>
    public void Close()
    {
        _closing.Cancel();
    }

    /// <inheritdoc />
    public byte[] GetCommitMetadata(long commitNum)
    {
        lock (_commits)
        {
            return _commits.TryGetValue(commitNum, out var metadata)
                ? metadata
                : throw new InvalidDataException($"DARQ '{_darqName}': commit {commitNum} is not on commit device '{_device.FileName}'.");
        }
    }

    /// <inheritdoc />
    public IEnumerable<long> ListCommits()
    {
        lock (_commits)
        {
            var numbers = new List<long>(_commits.Keys);
            numbers.Reverse();
            return numbers;
        }
    }

    /// <inheritdoc />
    public void RemoveCommit(long commitNum)
    {
        // Slots are overwritten in turn; forgetting an old commit is all there is to do.
        lock (_commits)
        {
            if (_commits.Count > 1)
            {
                _commits.Remove(commitNum);
            }
        }
    }

    /// <inheritdoc />
    public void RemoveAllCommits()
    {
        lock (_commits)
        {
            _commits.Clear();
        }
    }

    /// <inheritdoc />
    public void OnRecovery(long commitNum)
    {
    }

    /// <inheritdoc />
    public void Dispose()
    {
        _closing.Cancel();
        _closing.Dispose();
        if (_ownsDevice)
        {
            _device.Dispose();
        }
    }

    private static int RoundUp(int value, int multiple) => (value + multiple - 1) / multiple * multiple;

    /// <summary>
    /// Reads one slot of this layout into <paramref name="destination"/> (<paramref name="slotSize"/> bytes), zeros where
    /// nothing was written; a slot that is empty, torn or damaged is found so when it is parsed.
    /// </summary>
    private async Task ReadSlotRegionAsync(IntPtr destination, int slot, int slotSize)
    {
        var (error, read) = await ReadAsync(destination, (ulong)slot * (ulong)slotSize, (uint)slotSize).ConfigureAwait(false);
        // A failed read is an error, not an empty slot: treating it as empty would open an older commit, or an
        // empty DARQ, and the next commits would overwrite the real ones.
        if (error != 0 && error != DeviceErrorCodes.NotFound)
        {
            throw new IOException($"DARQ '{_darqName}': reading commit slot {slot} from device '{_device.FileName}' failed with error code {error}.");
        }

        int valid = error == DeviceErrorCodes.NotFound ? 0 : (int)Math.Min(read, (uint)slotSize);
        Clear(destination + valid, slotSize - valid);
    }

    private static unsafe IntPtr Allocate(int length) => (IntPtr)NativeMemory.AlignedAlloc((nuint)length, Alignment);

    private static unsafe void Free(IntPtr buffer) => NativeMemory.AlignedFree((void*)buffer);

    private static unsafe ReadOnlySpan<byte> AsSpan(IntPtr buffer, int length) => new((void*)buffer, length);

    private static unsafe void Clear(IntPtr buffer, int length) => new Span<byte>((void*)buffer, length).Clear();

    private (long CommitNum, byte[]? Metadata) ParseSlot(ReadOnlySpan<byte> slotBytes, int slot, int slotSize)
    {
        if (!slotBytes[..HeaderSize].ContainsAnyExcept((byte)0))
        {
            return (-1, null);
        }

        string? problem = null;
        long commitNum = BinaryPrimitives.ReadInt64LittleEndian(slotBytes[8..]);
        int length = BinaryPrimitives.ReadInt32LittleEndian(slotBytes[16..]);
        if (BinaryPrimitives.ReadUInt32LittleEndian(slotBytes) != Magic
            || BinaryPrimitives.ReadUInt64LittleEndian(slotBytes[HashedHeaderBytes..]) != XxHash64.HashToUInt64(slotBytes[..HashedHeaderBytes]))
        {
            problem = "bad magic or header checksum";
        }
        else if (BinaryPrimitives.ReadUInt16LittleEndian(slotBytes[4..]) != Version)
        {
            problem = $"unsupported commit record version {BinaryPrimitives.ReadUInt16LittleEndian(slotBytes[4..])}";
        }
        else if (length < 0 || HeaderSize + length > slotBytes.Length)
        {
            problem = $"metadata length {length} does not fit the slot";
        }
        else if (XxHash64.HashToUInt64(slotBytes.Slice(HeaderSize, length)) != BinaryPrimitives.ReadUInt64LittleEndian(slotBytes[40..]))
        {
            problem = "metadata checksum mismatch (a torn commit write)";
        }

        // Revision 4 records the slot size (0 before): the second slot's offset follows from it.
        int recorded = problem is null ? BinaryPrimitives.ReadInt32LittleEndian(slotBytes[48..]) : 0;
        if (recorded != 0 && recorded != slotSize)
        {
            // A first slot, or a second slot at the offset it states, of another size refused the open already
            // (FindForeignSlotSize); this one is neither, so it is not a commit of this DARQ's layout.
            Debug.Assert(slot != 0, "a first slot of another size was refused before parsing");
            problem = $"a record of {recorded}-byte slots found where a {slotSize}-byte layout puts the second slot";
        }

        if (problem is not null)
        {
            DarqLogMessages.CommitSlotInvalid(_logger, _darqName, slot, problem);
            return (-1, null);
        }

        Debug.Assert(length <= _maxMetadataBytes || length <= slotBytes.Length - HeaderSize, "a valid record fits its slot");
        return (commitNum, slotBytes.Slice(HeaderSize, length).ToArray());
    }

    /// <summary>
    /// Writes a commit record to its slot, retrying with exponential backoff until the device accepts it; throws only
    /// once the DARQ closes. Runs on FasterLog's commit worker, which is blocked for the device write anyway.
    /// </summary>
    private void WriteWithRetry(IntPtr source, int slot, uint length, long commitNum)
    {
        var delay = FirstRetryDelay;
        for (int attempt = 1; ; attempt++)
        {
            uint error = WriteBlocking(source, (ulong)slot * (ulong)_slotSize, length);
            if (error == 0)
            {
                if (attempt > 1)
                {
                    DarqLogMessages.CommitWriteRecovered(_logger, _darqName, commitNum, attempt);
                }

                return;
            }

            if (error == DeviceErrorCodes.Fenced)
            {
                // Another instance owns the storage now: no retry can succeed, and waiting would only hide it.
                DarqLogMessages.CommitWriteFenced(_logger, _darqName, commitNum, _device.FileName);
                var fenced = new StorageFencedException(
                    $"DARQ '{_darqName}' was fenced: another instance took its storage over, and commit {commitNum} was refused by device " +
                    $"'{_device.FileName}'. This instance can no longer commit; dispose it.");
                Fail(fenced);
                throw fenced;
            }

            // Log the first failures and then every power of two, not every retry of a long outage.
            if (attempt <= 2 || uint.IsPow2((uint)attempt))
            {
                DarqLogMessages.CommitWriteFailed(_logger, _darqName, commitNum, _device.FileName, error, attempt, (long)delay.TotalMilliseconds);
            }

            if (attempt >= PersistentFailureAttempts)
            {
                Fail(new IOException(
                    $"DARQ '{_darqName}': writing commit records to device '{_device.FileName}' keeps failing ({attempt} attempts for commit " +
                    $"{commitNum}, last error code {error}); the commit is retried in the background until the device recovers or the DARQ closes."));
            }

            // A blocking wait, on a thread that blocks for the device write anyway; Close ends it at once.
            if (_closing.Token.WaitHandle.WaitOne(delay))
            {
                var closed = new IOException(
                    $"DARQ '{_darqName}' closed while commit {commitNum} could not be written to device '{_device.FileName}' (last error code {error}).");
                Fail(closed);
                throw closed;
            }

            delay = delay * 2 < MaxRetryDelay ? delay * 2 : MaxRetryDelay;
        }
    }

    /// <summary>Faults the current <see cref="Failure"/> for everyone waiting on it, and installs a fresh one for later waiters.</summary>
    private void Fail(Exception exception)
    {
        var failure = _failure;
        _failure = new TaskCompletionSource(TaskCreationOptions.RunContinuationsAsynchronously);
        failure.TrySetException(exception);

        // Nobody may be waiting: mark the exception observed.
        _ = failure.Task.Exception;
    }

    /// <summary>
    /// Writes and waits. FASTER 2.6's <c>ILogCommitManager.Commit</c> is synchronous and runs on FasterLog's own commit
    /// worker, which must not return before the commit record is durable; blocking that thread is the contract.
    /// </summary>
    private uint WriteBlocking(IntPtr source, ulong address, uint length)
    {
        var completion = new IoCompletion();
        _device.WriteAsync(source, address, length, static (error, bytes, context) =>
        {
            var state = (IoCompletion)context!;
            state.Source.TrySetResult((error, bytes));
        }, completion);

        // A wait on the task, not on an event: the thread pool counts a thread blocked in Task.Wait as blocked and adds
        // another at once, where a thread blocked on an event only looks busy. Several DARQs committing at the same time
        // each block a pool thread here; on a 2-core machine, with the pool at two or three threads, that starved every
        // other continuation (deliveries, steps, timers) for 0.5-1 s until the pool grew on its own.
        completion.Source.Task.Wait();
        return completion.Source.Task.Result.Item1;
    }

    private Task<(uint Error, uint Read)> ReadAsync(IntPtr destination, ulong address, uint length)
    {
        var completion = new IoCompletion();
        _device.ReadAsync(address, destination, length, static (error, bytes, context) =>
        {
            var state = (IoCompletion)context!;
            state.Source.TrySetResult((error, bytes));
        }, completion);
        return completion.Source.Task;
    }

    private sealed class IoCompletion
    {
        public TaskCompletionSource<(uint, uint)> Source { get; } = new(TaskCreationOptions.RunContinuationsAsynchronously);
    }
}
