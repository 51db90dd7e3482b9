using Dse.Storage;
using FASTER.core;
using Microsoft.Extensions.Logging;

namespace Dse.Darq.TestHost;

/// <summary>
/// Where the host's DARQ lives, the same for the host and for the tests that reopen it: local files in a directory, or
/// page blobs in a container. The sizes are small so that a short run crosses pages and segments.
/// </summary>
internal static class HostStorage
{
    public const long PageSize = 1 << 16;
    public const long SegmentSize = 1 << 20;
    public const long ProducerId = 7;

    /// <summary>The DARQ's options over local files <c>DIR/darq.log</c> and <c>DIR/darq.commit</c>.</summary>
    public static DarqOptions LocalFiles(string directory)
    {
        Directory.CreateDirectory(directory);
        return Options(
            DseDevices.CreateLocalFile(Path.Combine(directory, "darq.log")),
            DseDevices.CreateLocalFile(Path.Combine(directory, "darq.commit")));
    }

    /// <summary>The DARQ's options over page blobs <c>darq.log*</c> and <c>darq.commit*</c> in a container.</summary>
    /// <param name="connectionString">The storage account's connection string.</param>
    /// <param name="container">The container (one per DARQ).</param>
    /// <param name="logger">Receives the devices' request failures; <see langword="null"/> for none.</param>
    public static DarqOptions PageBlobs(string connectionString, string container, ILogger? logger = null) => Options(
        DseDevices.CreateAzurePageBlob(connectionString, container, "darq.log", logger: logger),
        DseDevices.CreateAzurePageBlob(connectionString, container, "darq.commit", logger: logger));

    public static DarqOptions Options(IDevice log, IDevice commit) => new()
    {
        Name = "host",
        LogDevice = log,
        CommitDevice = commit,
        PageSize = PageSize,
        MemorySize = 4 * PageSize,
        SegmentSize = SegmentSize,
        MaxMessageSize = (int)(PageSize / 4),
        MaxProducers = 16,
        CommitInterval = TimeSpan.FromMilliseconds(2),
    };
}
