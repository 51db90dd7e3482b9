namespace Dse.Services;

/// <summary>Storage and sizing of a <see cref="SpeculativeKv"/>. Validated when the store is created.</summary>
public sealed class SpeculativeKvOptions
{
    /// <summary>
    /// The directory holding the hybrid log (<c>hlog/</c>), FASTER's checkpoints (<c>checkpoints/</c>) and one manifest
    /// per persisted version (<c>manifests/</c>). Required; reopen the same directory to recover.
    /// </summary>
    public string? Directory { get; set; }

    /// <summary>
    /// Whether the store takes exclusive ownership of <see cref="Directory"/> when it is constructed, before reading
    /// anything, and holds it until disposed (<see cref="Dse.Storage.StorageFence.AcquireDirectory"/>: the lock file
    /// <c>.owner.lock</c> in the directory). Default true. A second instance on the same directory, in this process or
    /// another, is refused with a <see cref="Dse.Storage.StorageFencedException"/> naming the lock file and changes nothing;
    /// the lock dies with the process, even by <c>kill -9</c>. Turn off only when something else guarantees a single owner.
    /// </summary>
    public bool ExclusiveStorage { get; set; } = true;

    /// <summary>Hash index size in buckets (a power of two; 64 bytes each). Default 2^16.</summary>
    public long IndexBuckets { get; set; } = 1L << 16;

    /// <summary>Hybrid log page size in bits; a record (key, value and header) must fit in one page. Default 20 (1 MiB).</summary>
    public int PageSizeBits { get; set; } = 20;

    /// <summary>Size in bits of the hybrid log's in-memory part. Default 24 (16 MiB).</summary>
    public int MemorySizeBits { get; set; } = 24;

    /// <summary>Size in bits of one hybrid log segment file. Default 28 (256 MiB).</summary>
    public int SegmentSizeBits { get; set; } = 28;

    /// <summary>The longest key accepted, in bytes. Default 1 KiB.</summary>
    public int MaxKeyBytes { get; set; } = 1024;

    /// <summary>The longest value accepted, in bytes. Default 256 KiB.</summary>
    public int MaxValueBytes { get; set; } = 256 * 1024;

    /// <summary>
    /// Every how many checkpoints the hash index is checkpointed too (the others checkpoint the hybrid log only, and
    /// recovery replays the log from the last index checkpoint). Default 16; 1 takes a full checkpoint per version.
    /// </summary>
    public int IndexCheckpointInterval { get; set; } = 16;

    internal void Validate()
    {
        if (string.IsNullOrWhiteSpace(Directory))
        {
            throw new ArgumentException($"{nameof(SpeculativeKvOptions)}.{nameof(Directory)} is required.", nameof(Directory));
        }

        if (IndexBuckets < 64 || !long.IsPow2(IndexBuckets))
        {
            throw new ArgumentOutOfRangeException(nameof(IndexBuckets), IndexBuckets, "The index size must be a power of two of at least 64 buckets.");
        }

        if (PageSizeBits is < 12 or > 30)
        {
            throw new ArgumentOutOfRangeException(nameof(PageSizeBits), PageSizeBits, "The page size must be between 2^12 and 2^30 bytes.");
        }

        if (MemorySizeBits < PageSizeBits + 1 || MemorySizeBits > 40)
        {
            throw new ArgumentOutOfRangeException(nameof(MemorySizeBits), MemorySizeBits, $"The memory must hold at least two pages (>= {PageSizeBits + 1} bits).");
        }

        if (SegmentSizeBits < PageSizeBits || SegmentSizeBits > 40)
        {
            throw new ArgumentOutOfRangeException(nameof(SegmentSizeBits), SegmentSizeBits, $"A segment must hold at least one page (>= {PageSizeBits} bits).");
        }

        if (MaxKeyBytes < 1 || MaxValueBytes < 0 || (long)MaxKeyBytes + MaxValueBytes + 64 > 1L << PageSizeBits)
        {
            throw new ArgumentOutOfRangeException(nameof(MaxValueBytes), MaxValueBytes, $"A record of the largest key ({MaxKeyBytes}) and value must fit in one {1L << PageSizeBits}-byte page.");
        }

        if (IndexCheckpointInterval < 1)
        {
            throw new ArgumentOutOfRangeException(nameof(IndexCheckpointInterval), IndexCheckpointInterval, "Must be at least 1.");
        }
    }
}
