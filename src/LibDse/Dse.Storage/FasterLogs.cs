using System.Runtime.CompilerServices;
using FASTER.core;

namespace Dse.Storage;

/// <summary>
/// How the project opens and reads FasterLogs (DARQ, the speculative log): one place for the settings every such log
/// needs and for turning FasterLog's read errors into one exception that names the address.
/// </summary>
public static class FasterLogs
{
    /// <summary>
    /// The settings of a log whose owner commits explicitly and recovers explicitly: no automatic commit, no recovery of
    /// the latest commit on open (FasterLog swallows errors when it recovers on its own, so the owner calls
    /// <see cref="FasterLog.Recover(long)"/> and treats a failure as an error), no FasterLog checksums (the owner's entry
    /// format carries its own), and no automatic refresh of the safe tail.
    /// </summary>
    /// <param name="logDevice">The device the log's pages go to.</param>
    /// <param name="commitManager">Where the commit records go.</param>
    /// <param name="pageSize">The page size in bytes (a power of two); an entry, or a batch of entries, fits on one page.</param>
    /// <param name="memorySize">The log memory in bytes (a power of two, at least two pages).</param>
    /// <param name="segmentSize">The size of one file or blob of the log device in bytes (a power of two, at least a page).</param>
    /// <returns>The settings, for <see cref="FasterLog(FasterLogSettings, Microsoft.Extensions.Logging.ILogger)"/>.</returns>
    public static FasterLogSettings Settings(IDevice logDevice, ILogCommitManager commitManager, long pageSize, long memorySize, long segmentSize)
    {
        ArgumentNullException.ThrowIfNull(logDevice);
        ArgumentNullException.ThrowIfNull(commitManager);
        return new FasterLogSettings
        {
            LogDevice = logDevice,
            PageSize = pageSize,
            MemorySize = memorySize,
            SegmentSize = segmentSize,
            LogCommitManager = commitManager,
            LogChecksum = LogChecksumType.None,
            TryRecoverLatest = false,
            AutoRefreshSafeTailAddress = false,
            AutoCommit = false,
        };
    }

    /// <summary>
    /// Reads the entries of <paramref name="log"/> in [<paramref name="from"/>, <paramref name="until"/>) in address order,
    /// checking every record length word before FasterLog's iterator examines it.
    /// </summary>
    /// <param name="log">The log (opened with <see cref="Settings"/>).</param>
    /// <param name="from">The first address to read (an entry's address, or the begin address; below it, the begin address).</param>
    /// <param name="until">The address to stop at (exclusive; at most the committed tail, beyond which nothing is read).</param>
    /// <param name="cancellationToken">Cancels waiting for a page to be read.</param>
    /// <returns>The entries; each entry's buffer is its own.</returns>
    /// <exception cref="FasterLogReadException">
    /// A record cannot be read: a failed storage read, or a damaged length word (its record would not fit in its page).
    /// The entries before it are returned first.
    /// </exception>
    /// <remarks>
    /// FasterLog's iterator computes a record's size as <c>header + ((length + 3) &amp; ~3)</c> in 32-bit arithmetic: for
    /// a damaged length word near <see cref="int.MaxValue"/> or <see cref="int.MinValue"/> the size overflows to a
    /// negative number, the iterator's address does not advance and <c>GetNext</c> spins forever inside one synchronous
    /// call, where no cancellation reaches it. So no word reaches the iterator unchecked (<see cref="FasterLogFraming"/>):
    /// <list type="bullet">
    /// <item>The word after each returned record is read from the page the iterator just returned it from
    /// (<see cref="FasterLogScanIterator.UnsafeGetNext"/> keeps the page pinned): no I/O.</item>
    /// <item>A word that page does not hold (the scan's first record, and the first record of each page the scan
    /// enters) is read from the device with <see cref="FasterLog.ReadRecordLengthAsync"/>: one sector read per
    /// scan and per page, against the iterator's own whole-page reads. A word this process appended and FasterLog
    /// still holds in memory was framed by FasterLog itself and is not read (<see cref="FasterLogResidency"/>), so a
    /// scan of recent entries from the begin address or a page start does no I/O; a scan that starts elsewhere reads
    /// its first word, since the caller's start may lie inside a record.</item>
    /// </list>
    /// Validating whole pages ahead of the iterator would read every page twice; the iterator reaches the next record
    /// within a page only through the word checked here, and a new page only through its first word (after padding, or
    /// after a record that ends the page), so checking those words is enough.
    /// </remarks>
    public static async IAsyncEnumerable<FasterLogEntry> ScanAsync(FasterLog log, long from, long until,
        [EnumeratorCancellation] CancellationToken cancellationToken = default)
    {
        ArgumentNullException.ThrowIfNull(log);
        var framing = new FasterLogFraming(log);

        // Before the range check: a recovery scan of an empty log is what first sees it.
        var residency = FasterLogResidency.Of(log);
        from = Math.Max(from, log.BeginAddress);
        until = Math.Min(until, log.CommittedUntilAddress);
        if (from >= until)
        {
            yield break;
        }

        using var iterator = log.Scan(from, until, name: null, recover: false);

        // The address whose length word was checked (and, when it is padding, the words the iterator goes on to): the
        // iterator examines the word at its next address first, so that is checked before every GetNext.
        long checkedAt = -1;

        // A caller may start anywhere (the speculative log scans from an LSN its caller chose): unless the start is
        // surely a record's, its word is checked even where this process wrote the bytes, since they may be payload.
        bool startMayBeInsideRecord = from != log.BeginAddress && framing.OffsetInPage(from) != 0;
        while (true)
        {
            // A truncation committed past the iterator moves it up to the new begin address (FasterLog shifts its
            // allocator's begin address to the committed one right after setting CommittedBeginAddress).
            long position = Math.Max(iterator.NextAddress, log.CommittedBeginAddress);
            if (position < until && position != checkedAt)
            {
                bool anyWord = startMayBeInsideRecord && position == from;
                await CheckFromDeviceAsync(log, framing, residency, position, until, anyWord, cancellationToken).ConfigureAwait(false);
                checkedAt = position;
            }

            FasterLogEntry entry;
            int nextWord;
            try
            {
                if (!TryGetNext(iterator, until, framing, out entry, out nextWord))
                {
                    if (await iterator.WaitAsync(cancellationToken).ConfigureAwait(false))
                    {
                        continue;
                    }

                    yield break;
                }
            }
            catch (Exception e) when (IsReadError(e))
            {
                throw new FasterLogReadException(position, e);
            }

            yield return entry;

            long next = entry.NextAddress;
            if (next >= until || framing.OffsetInPage(next) == 0)
            {
                // The end, or a new page: checked from the device before the iterator goes there.
                continue;
            }

            switch (framing.Classify(next, nextWord))
            {
                case FrameWord.Record:
                    break;
                case FrameWord.Padding:
                    await CheckFromDeviceAsync(log, framing, residency, framing.NextPage(next), until, anyWord: false, cancellationToken).ConfigureAwait(false);
                    break;
                default:
                    throw framing.Damaged(next, nextWord);
            }

            checkedAt = next;
        }
    }

    /// <summary>Reads one committed entry at <paramref name="address"/>.</summary>
    /// <param name="log">The log (opened with <see cref="Settings"/>).</param>
    /// <param name="address">The entry's address.</param>
    /// <param name="estimatedLength">The entry's length if known (0: FasterLog reads the record header first).</param>
    /// <param name="cancellationToken">Cancels the read.</param>
    /// <returns>The entry and its length; a null entry when FasterLog found nothing readable there.</returns>
    /// <exception cref="FasterLogReadException">
    /// FasterLog cannot read the record (a failed storage read, or a damaged record header), or its length word says
    /// it does not fit in its page.
    /// </exception>
    /// <remarks>
    /// FasterLog's single-record read does not loop over length words: it refuses a negative word or one larger than
    /// a page (a null entry), so no word makes it spin. A word that passes that test but whose record would cross the
    /// page is refused here.
    /// </remarks>
    public static async ValueTask<(byte[]? Entry, int Length)> ReadAsync(FasterLog log, long address, int estimatedLength, CancellationToken cancellationToken = default)
    {
        ArgumentNullException.ThrowIfNull(log);

        // A log's first read may be this one (the speculative log's recovery): it fixes where this process's own entries begin.
        _ = FasterLogResidency.Of(log);
        (byte[]? Entry, int Length) read;
        try
        {
            read = await log.ReadAsync(address, estimatedLength, cancellationToken).ConfigureAwait(false);
        }
        catch (Exception e) when (IsReadError(e) || e is IOException)
        {
            throw new FasterLogReadException(address, e);
        }

        if (read.Entry is not null && read.Length != 0)
        {
            var framing = new FasterLogFraming(log);
            if (framing.Classify(address, read.Length) != FrameWord.Record)
            {
                throw framing.Damaged(address, read.Length);
            }
        }

        return read;
    }

    /// <summary>
    /// Checks the length word at <paramref name="address"/> on the device and, while it is page padding, the first word
    /// of each next page below <paramref name="until"/>. A record's word this process wrote and still holds in memory
    /// needs no check; <paramref name="anyWord"/> says <paramref name="address"/> may not be a record's.
    /// </summary>
    private static async ValueTask CheckFromDeviceAsync(FasterLog log, FasterLogFraming framing, FasterLogResidency residency, long address, long until,
        bool anyWord, CancellationToken cancellationToken)
    {
        while (address < until && (anyWord || !residency.IsOwnInMemory(address)))
        {
            anyWord = false;
            int word;
            (byte[]? Entry, int Length) record = (null, 0);
            try
            {
                word = await log.ReadRecordLengthAsync(address, cancellationToken).ConfigureAwait(false);
                if (word == 0)
                {
                    // ReadRecordLengthAsync also answers 0 when it could not read the header; ReadAsync tells a zero
                    // word (an empty entry) from a failed read (no entry). Rare: once per page padding.
                    record = await log.ReadAsync(address, 0, cancellationToken).ConfigureAwait(false);
                }
            }
            catch (Exception e) when (IsReadError(e) || e is IOException)
            {
                throw new FasterLogReadException(address, e);
            }

            if (word == 0 && record.Entry is null)
            {
                throw new FasterLogReadException(address, new IOException("the record's length field could not be read from the log device"));
            }

            switch (framing.Classify(address, word))
            {
                case FrameWord.Record:
                    return;
                case FrameWord.Padding:
                    address = framing.NextPage(address);
                    break;
                default:
                    throw framing.Damaged(address, word);
            }
        }
    }

    /// <summary>
    /// The iterator's next entry, copied, and the length word after it when the same page holds it below
    /// <paramref name="until"/> (otherwise 0, unused).
    /// </summary>
    private static unsafe bool TryGetNext(FasterLogScanIterator iterator, long until, FasterLogFraming framing, out FasterLogEntry entry, out int nextWord)
    {
        nextWord = 0;
        if (!iterator.UnsafeGetNext(out byte* pointer, out int length, out long address, out long next))
        {
            entry = default;
            return false;
        }

        try
        {
            var buffer = new byte[length];
            new ReadOnlySpan<byte>(pointer, length).CopyTo(buffer);
            entry = new FasterLogEntry(buffer, length, address, next);
            if (next < until && framing.OffsetInPage(next) != 0)
            {
                // Same page: the next record's header follows this entry's padded bytes, and the iterator read the page
                // up to at least `until`.
                nextWord = Unsafe.ReadUnaligned<int>(pointer + (next - address - framing.HeaderSize));
            }

            return true;
        }
        finally
        {
            iterator.UnsafeRelease();
        }
    }

    /// <summary>What FasterLog throws when it cannot read a record: a failed device read or a record header it cannot parse.</summary>
    private static bool IsReadError(Exception e) => e is FasterException or IndexOutOfRangeException or ArgumentException or OverflowException;
}
