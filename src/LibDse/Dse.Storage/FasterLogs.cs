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
    /// Reads the entries of <paramref name="log"/> in [<paramref name="from"/>, <paramref name="until"/>) in address order.
    /// </summary>
    /// <param name="log">The log.</param>
    /// <param name="from">The first address to read (an entry's address, or the begin address).</param>
    /// <param name="until">The address to stop at (exclusive; at most the committed or safe tail).</param>
    /// <param name="cancellationToken">Cancels waiting for a page to be read.</param>
    /// <returns>The entries; each entry's buffer is its own.</returns>
    /// <exception cref="FasterLogReadException">FasterLog cannot read the record at an address (a failed storage read, or a damaged record header).</exception>
    public static async IAsyncEnumerable<FasterLogEntry> ScanAsync(FasterLog log, long from, long until,
        [EnumeratorCancellation] CancellationToken cancellationToken = default)
    {
        ArgumentNullException.ThrowIfNull(log);
        using var iterator = log.Scan(from, until, name: null, recover: false);
        long address = from;
        while (true)
        {
            byte[] entry;
            int length;
            long next;
            try
            {
                if (!iterator.GetNext(out entry, out length, out address, out next))
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
                throw new FasterLogReadException(address, e);
            }

            yield return new FasterLogEntry(entry, length, address, next);
        }
    }

    /// <summary>Reads one committed entry at <paramref name="address"/>.</summary>
    /// <param name="log">The log.</param>
    /// <param name="address">The entry's address.</param>
    /// <param name="estimatedLength">The entry's length if known (0: FasterLog reads the record header first).</param>
    /// <param name="cancellationToken">Cancels the read.</param>
    /// <returns>The entry and its length; a null entry when FasterLog found nothing readable there.</returns>
    /// <exception cref="FasterLogReadException">FasterLog cannot read the record (a failed storage read, or a damaged record header).</exception>
    public static async ValueTask<(byte[]? Entry, int Length)> ReadAsync(FasterLog log, long address, int estimatedLength, CancellationToken cancellationToken = default)
    {
        ArgumentNullException.ThrowIfNull(log);
        try
        {
            return await log.ReadAsync(address, estimatedLength, cancellationToken).ConfigureAwait(false);
        }
        catch (Exception e) when (IsReadError(e) || e is IOException)
        {
            throw new FasterLogReadException(address, e);
        }
    }

    /// <summary>What FasterLog throws when it cannot read a record: a failed device read or a record header it cannot parse.</summary>
    private static bool IsReadError(Exception e) => e is FasterException or IndexOutOfRangeException or ArgumentException or OverflowException;
}
