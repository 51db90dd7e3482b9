using FASTER.core;

namespace Dse.Storage;

/// <summary>Options of an <see cref="InMemoryDevice"/>.</summary>
public sealed class InMemoryDeviceOptions
{
    /// <summary>Sector size in bytes: addresses and lengths must be multiples of it. Default 512; a power of two, 64 or more.</summary>
    public uint SectorSize { get; set; } = 512;

    /// <summary>Capacity in bytes, or <see cref="Devices.CAPACITY_UNSPECIFIED"/> (the default) for no limit.</summary>
    public long Capacity { get; set; } = Devices.CAPACITY_UNSPECIFIED;

    /// <summary>
    /// When <see langword="true"/>, completion callbacks run inline on the calling thread, which makes
    /// single-threaded simulations deterministic. Default <see langword="false"/>: callbacks run on the
    /// thread pool, as with a real asynchronous device.
    /// </summary>
    public bool CompleteSynchronously { get; set; }

    /// <summary>The name reported as <see cref="IDevice.FileName"/>. Default <c>"in-memory"</c>.</summary>
    public string Name { get; set; } = "in-memory";

    internal void Validate()
    {
        if (SectorSize < 64 || !uint.IsPow2(SectorSize))
        {
            throw new ArgumentOutOfRangeException(nameof(SectorSize), SectorSize, "The sector size must be a power of two of at least 64 bytes.");
        }

        if (Capacity != Devices.CAPACITY_UNSPECIFIED && Capacity <= 0)
        {
            throw new ArgumentOutOfRangeException(nameof(Capacity), Capacity, "The capacity must be positive or Devices.CAPACITY_UNSPECIFIED.");
        }

        ArgumentException.ThrowIfNullOrEmpty(Name);
    }
}
