using FASTER.core;

namespace Dse.Services;

/// <summary>Storage and sizing of a <see cref="SpeculativeLog"/>. Validated when the log opens.</summary>
public sealed class SpeculativeLogOptions
{
    /// <summary>The device holding the log's entries. Required. Reopen the same device (or storage) to recover.</summary>
    public IDevice? LogDevice { get; set; }

    /// <summary>
    /// A directory for FasterLog's commit records (FASTER's local-storage commit manager). Exactly one of this and
    /// <see cref="CommitManager"/> must be set. Default null.
    /// </summary>
    public string? CommitDirectory { get; set; }

    /// <summary>A FasterLog commit manager of your own (for example on cloud storage). Default null.</summary>
    public ILogCommitManager? CommitManager { get; set; }

    /// <summary>Whether disposing the log disposes <see cref="LogDevice"/> and <see cref="CommitManager"/>. Default false.</summary>
    public bool OwnsStorage { get; set; }

    /// <summary>
    /// Whether the log takes exclusive ownership of its storage when it is constructed, before reading anything, and holds
    /// it until disposed (<see cref="Dse.Storage.StorageFence"/>: a lock file beside the log device's files and one in
    /// <see cref="CommitDirectory"/>). Default true. A second instance on the same files or directory, in this process or
    /// another, is refused with a <see cref="Dse.Storage.StorageFencedException"/> naming the lock file and changes
    /// nothing; the lock dies with the process, even by <c>kill -9</c>. In-memory devices and a <see cref="CommitManager"/>
    /// of your own hold nothing. A page blob device is refused (its lease is taken asynchronously): take its fence with
    /// <c>StorageFence.AcquireAsync</c> yourself, hold it while the log is open, and turn this off. Turn off only when
    /// something else guarantees a single owner.
    /// </summary>
    public bool ExclusiveStorage { get; set; } = true;

    /// <summary>Log page size in bits; an entry must fit in one page. Default 20 (1 MiB).</summary>
    public int PageSizeBits { get; set; } = 20;

    /// <summary>Size in bits of the log's in-memory part (at least two pages). Default 23 (8 MiB).</summary>
    public int MemorySizeBits { get; set; } = 23;

    /// <summary>Size in bits of one segment file on the device. Default 28 (256 MiB).</summary>
    public int SegmentSizeBits { get; set; } = 28;

    /// <summary>The largest entry payload <see cref="SpeculativeLog.Append"/> accepts, in bytes. Default 256 KiB.</summary>
    public int MaxEntryBytes { get; set; } = 256 * 1024;

    internal void Validate()
    {
        if (LogDevice is null)
        {
            throw new ArgumentException($"{nameof(SpeculativeLogOptions)}.{nameof(LogDevice)} is required.", nameof(LogDevice));
        }

        if ((CommitDirectory is null) == (CommitManager is null))
        {
            throw new ArgumentException($"Set exactly one of {nameof(SpeculativeLogOptions)}.{nameof(CommitDirectory)} and {nameof(CommitManager)}.", nameof(CommitDirectory));
        }

        if (PageSizeBits is < 12 or > 30)
        {
            throw new ArgumentOutOfRangeException(nameof(PageSizeBits), PageSizeBits, "The page size must be between 2^12 and 2^30 bytes.");
        }

        if (MemorySizeBits < PageSizeBits + 1 || MemorySizeBits > 40)
        {
            throw new ArgumentOutOfRangeException(nameof(MemorySizeBits), MemorySizeBits, $"The memory must hold at least two pages (>= {PageSizeBits + 1} bits) and at most 2^40 bytes.");
        }

        if (SegmentSizeBits < PageSizeBits || SegmentSizeBits > 40)
        {
            throw new ArgumentOutOfRangeException(nameof(SegmentSizeBits), SegmentSizeBits, $"A segment must hold at least one page (>= {PageSizeBits} bits).");
        }

        long limit = (1L << PageSizeBits) - LogEntryFormat.LogOverhead - 64;
        if (MaxEntryBytes < 1 || MaxEntryBytes > limit)
        {
            throw new ArgumentOutOfRangeException(nameof(MaxEntryBytes), MaxEntryBytes, $"An entry must fit in one page: at most {limit} bytes with {PageSizeBits}-bit pages.");
        }
    }
}
