using FASTER.core;

namespace Dse.Storage;

/// <summary>Options of a local file device created by <see cref="DseDevices.CreateLocalFile"/>.</summary>
public sealed class LocalFileDeviceOptions
{
    /// <summary>Whether disposing the device deletes the segment files it opened. Default <see langword="false"/>.</summary>
    public bool DeleteOnClose { get; set; }

    /// <summary>Whether each segment file is extended to the full segment size when first opened. Default <see langword="false"/>.</summary>
    public bool PreallocateFile { get; set; }

    /// <summary>
    /// Whether writes bypass the OS page cache (O_DIRECT, or FILE_FLAG_NO_BUFFERING on Windows), which needs
    /// sector-aligned addresses, lengths and buffers. Default <see langword="true"/>, as in FASTER; turn it off on
    /// file systems without direct I/O such as tmpfs.
    /// </summary>
    public bool DisableFileBuffering { get; set; } = true;

    /// <summary>Capacity in bytes, or <see cref="Devices.CAPACITY_UNSPECIFIED"/> (the default) for no limit.</summary>
    public long Capacity { get; set; } = Devices.CAPACITY_UNSPECIFIED;

    /// <summary>
    /// Whether to set the device's start and end segment from the files <c>{path}.{n}</c> that already exist.
    /// Default <see langword="false"/>: FASTER's scan fails when other files share the path prefix, and reads and
    /// writes work on existing files without it.
    /// </summary>
    public bool RecoverDevice { get; set; }

    internal void Validate()
    {
        if (Capacity != Devices.CAPACITY_UNSPECIFIED && Capacity <= 0)
        {
            throw new ArgumentOutOfRangeException(nameof(Capacity), Capacity, "The capacity must be positive or Devices.CAPACITY_UNSPECIFIED.");
        }
    }
}
