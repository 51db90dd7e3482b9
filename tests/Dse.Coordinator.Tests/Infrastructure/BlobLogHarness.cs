using Azure.Core.Pipeline;
using Azure.Storage.Blobs;
using Dse.Testing;
using Microsoft.Extensions.Logging;

namespace Dse.Coordinator.Tests.Infrastructure;

/// <summary>Append blob logs in a container of their own (not created up front: the log creates it), deleted on dispose.</summary>
public sealed class BlobLogHarness(AzuriteFixture azurite) : LogHarness
{
    public const string BlobName = "coordinator.log";

    public BlobContainerClient Container { get; } = new(azurite.ConnectionString, "c" + Guid.NewGuid().ToString("N"));

    public override FencingMode Fencing => FencingMode.NewcomerTakesOver;

    public override ICoordinatorLog CreateLog() => new BlobCoordinatorLog(Container, BlobName);

    public BlobCoordinatorLog CreateLog(LogCapture logs, string blobName = BlobName) => new(Container, blobName, logs.CreateLogger<BlobCoordinatorLog>());

    /// <summary>A log whose client runs <paramref name="policy"/> on every try of every request (fast retries).</summary>
    public BlobCoordinatorLog CreateLogWithPolicy(HttpPipelinePolicy policy, LogCapture logs)
    {
        var options = new BlobClientOptions();
        options.Retry.Delay = TimeSpan.FromMilliseconds(10);
        options.AddPolicy(policy, Azure.Core.HttpPipelinePosition.PerRetry);
        var container = new BlobContainerClient(azurite.ConnectionString, Container.Name, options);
        return new BlobCoordinatorLog(container, BlobName, logs.CreateLogger<BlobCoordinatorLog>());
    }

    public override async ValueTask DisposeAsync() => await Container.DeleteIfExistsAsync();
}
