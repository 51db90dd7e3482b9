namespace Dse.Storage;

/// <summary>Options of a <see cref="SnapshotLog"/>.</summary>
public sealed class SnapshotLogOptions
{
    /// <summary>
    /// Segment size passed to <c>IDevice.Initialize</c> when <see cref="InitializeDevice"/> is set: a power of two of at
    /// least 4096. Default 1 GiB. Records may span segments. Reopen a log with the segment size it was written with.
    /// </summary>
    public long SegmentSize { get; set; } = 1L << 30;

    /// <summary>
    /// Whether <see cref="SnapshotLog.OpenAsync"/> initializes the device with <see cref="SegmentSize"/>. Default
    /// <see langword="true"/>; set it to <see langword="false"/> when the caller already initialized the device.
    /// </summary>
    public bool InitializeDevice { get; set; } = true;

    /// <summary>Largest payload an append accepts, in bytes. Default 256 MiB; at most 1 GiB.</summary>
    public int MaxPayloadLength { get; set; } = 256 << 20;

    /// <summary>Whether disposing the log disposes the device. Default <see langword="false"/>.</summary>
    public bool OwnsDevice { get; set; }

    /// <summary>
    /// Whether the log takes exclusive ownership of its storage when it opens, before reading anything, and holds it until
    /// disposed (a <see cref="StorageFence"/>). Default <see langword="true"/>. On local files a second open of the same
    /// files, in this process or another, is refused with a <see cref="StorageFencedException"/> naming the lock file and
    /// changes nothing (the lock dies with the process, even by <c>kill -9</c>); on page blobs the new instance takes the
    /// storage over (breaking the old one's lease), and the old one's appends fail with a
    /// <see cref="StorageFencedException"/>; in-memory devices hold nothing. Turn off only when something else
    /// guarantees a single owner.
    /// </summary>
    public bool ExclusiveStorage { get; set; } = true;

    internal void Validate()
    {
        if (InitializeDevice && (SegmentSize < 4096 || !long.IsPow2(SegmentSize)))
        {
            throw new ArgumentOutOfRangeException(nameof(SegmentSize), SegmentSize, "The segment size must be a power of two of at least 4096 bytes.");
        }

        if (MaxPayloadLength is < 0 or > SnapshotRecordFormat.MaxPayloadLength)
        {
            throw new ArgumentOutOfRangeException(nameof(MaxPayloadLength), MaxPayloadLength,
                $"The payload limit must be between 0 and {SnapshotRecordFormat.MaxPayloadLength}.");
        }
    }
}
