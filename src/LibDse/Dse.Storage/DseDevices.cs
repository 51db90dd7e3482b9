using Azure.Storage.Blobs;
using FASTER.core;
using Microsoft.Extensions.Logging;

namespace Dse.Storage;

/// <summary>Creates the storage devices of DSE: local file, in-memory and Azure page blob, and wraps them with latency or faults.</summary>
public static class DseDevices
{
    /// <summary>
    /// Creates a device over local files <c>{path}.{segmentId}</c> using FASTER's own local storage device
    /// (the managed one on Linux and macOS, the native one on Windows). The directory is created if needed.
    /// </summary>
    /// <param name="path">Path and file name prefix of the segment files.</param>
    /// <param name="options">File options; <see langword="null"/> for the defaults (no preallocation, files kept on close).</param>
    public static IDevice CreateLocalFile(string path, LocalFileDeviceOptions? options = null)
    {
        ArgumentException.ThrowIfNullOrWhiteSpace(path);
        options ??= new LocalFileDeviceOptions();
        options.Validate();
        return Devices.CreateLogDevice(
            Path.GetFullPath(path),
            preallocateFile: options.PreallocateFile,
            deleteOnClose: options.DeleteOnClose,
            capacity: options.Capacity,
            recoverDevice: options.RecoverDevice,
            useIoCompletionPort: false,
            disableFileBuffering: options.DisableFileBuffering);
    }

    /// <summary>Creates an in-memory device over new, empty storage (reachable through <see cref="InMemoryDevice.Storage"/>).</summary>
    /// <param name="options">Device options; <see langword="null"/> for the defaults.</param>
    public static InMemoryDevice CreateInMemory(InMemoryDeviceOptions? options = null) => new(new InMemoryStorage(), options);

    /// <summary>Creates an in-memory device over existing storage, for example to reopen it after a simulated crash.</summary>
    /// <param name="storage">The storage holding the segments.</param>
    /// <param name="options">Device options; <see langword="null"/> for the defaults.</param>
    public static InMemoryDevice CreateInMemory(InMemoryStorage storage, InMemoryDeviceOptions? options = null) => new(storage, options);

    /// <summary>Creates a page blob device over a container and blob name prefix.</summary>
    /// <param name="container">The container holding the segment blobs.</param>
    /// <param name="blobNamePrefix">Prefix of the blob names.</param>
    /// <param name="options">Device options; <see langword="null"/> for the defaults.</param>
    /// <param name="logger">Receives failures; <see langword="null"/> for none.</param>
    public static AzurePageBlobDevice CreateAzurePageBlob(BlobContainerClient container, string blobNamePrefix,
        AzurePageBlobDeviceOptions? options = null, ILogger? logger = null)
        => new(container, blobNamePrefix, options, logger);

    /// <summary>Creates a page blob device from a storage connection string.</summary>
    /// <param name="connectionString">The storage account connection string.</param>
    /// <param name="containerName">The container holding the segment blobs.</param>
    /// <param name="blobNamePrefix">Prefix of the blob names.</param>
    /// <param name="options">Device options; <see langword="null"/> for the defaults.</param>
    /// <param name="logger">Receives failures; <see langword="null"/> for none.</param>
    public static AzurePageBlobDevice CreateAzurePageBlob(string connectionString, string containerName, string blobNamePrefix,
        AzurePageBlobDeviceOptions? options = null, ILogger? logger = null)
    {
        ArgumentException.ThrowIfNullOrWhiteSpace(connectionString);
        ArgumentException.ThrowIfNullOrWhiteSpace(containerName);
        return new(new BlobContainerClient(connectionString, containerName), blobNamePrefix, options, logger);
    }

    /// <summary>Wraps a device so that each write is delayed by <paramref name="writeLatency"/>; the wrapper owns the device.</summary>
    /// <param name="device">The device to wrap.</param>
    /// <param name="writeLatency">Delay before each write is forwarded.</param>
    /// <param name="timeProvider">The clock for the delays; <see langword="null"/> for <see cref="TimeProvider.System"/>.</param>
    public static LatencyDevice WithLatency(this IDevice device, TimeSpan writeLatency, TimeProvider? timeProvider = null)
        => new(device, new LatencyDeviceOptions { WriteLatency = writeLatency, TimeProvider = timeProvider ?? TimeProvider.System });

    /// <summary>Wraps a device with the given latencies; the wrapper owns the device.</summary>
    /// <param name="device">The device to wrap.</param>
    /// <param name="options">Latencies, jitter and clock.</param>
    public static LatencyDevice WithLatency(this IDevice device, LatencyDeviceOptions options)
    {
        ArgumentNullException.ThrowIfNull(options);
        return new(device, options);
    }

    /// <summary>Wraps a device with a <see cref="FaultInjectingDevice"/> (no fault armed unless the options say so); the wrapper owns the device.</summary>
    /// <param name="device">The device to wrap.</param>
    /// <param name="options">Seed and fault probabilities; <see langword="null"/> for none.</param>
    public static FaultInjectingDevice WithFaults(this IDevice device, FaultInjectingDeviceOptions? options = null) => new(device, options);
}
