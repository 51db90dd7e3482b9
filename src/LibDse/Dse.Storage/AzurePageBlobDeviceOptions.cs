using FASTER.core;

namespace Dse.Storage;

/// <summary>Options of an <see cref="AzurePageBlobDevice"/>.</summary>
public sealed class AzurePageBlobDeviceOptions
{
    /// <summary>The largest page blob the service allows (8 TiB).</summary>
    public const long MaxPageBlobSize = 8L << 40;

    /// <summary>
    /// Size of each page blob when the device is used without segments (segment size -1). Default 512 GiB;
    /// a multiple of 512 up to <see cref="MaxPageBlobSize"/>. Page blobs are sparse, so unused space costs nothing.
    /// </summary>
    public long UnsegmentedBlobSize { get; set; } = 512L << 30;

    /// <summary>Whether the first write creates the container when it is missing. Default <see langword="true"/>.</summary>
    public bool CreateContainerIfNotExists { get; set; } = true;

    /// <summary>Capacity in bytes, or <see cref="Devices.CAPACITY_UNSPECIFIED"/> (the default) for no limit.</summary>
    public long Capacity { get; set; } = Devices.CAPACITY_UNSPECIFIED;

    internal void Validate()
    {
        if (UnsegmentedBlobSize <= 0 || UnsegmentedBlobSize % AzurePageBlobDevice.PageSize != 0 || UnsegmentedBlobSize > MaxPageBlobSize)
        {
            throw new ArgumentOutOfRangeException(nameof(UnsegmentedBlobSize), UnsegmentedBlobSize,
                $"The blob size must be a positive multiple of {AzurePageBlobDevice.PageSize} of at most {MaxPageBlobSize}.");
        }

        if (Capacity != Devices.CAPACITY_UNSPECIFIED && Capacity <= 0)
        {
            throw new ArgumentOutOfRangeException(nameof(Capacity), Capacity, "The capacity must be positive or Devices.CAPACITY_UNSPECIFIED.");
        }
    }
}
