using Azure.Core.Pipeline;
using Azure.Storage.Blobs;
using Dse.Testing;

namespace Dse.Coordinator.Tests.Infrastructure;

/// <summary>Append blob logs in a container of their own (not created up front: the log creates it), deleted on dispose.</summary>
public sealed class BlobLogHarness(AzuriteFixture azurite) : LogHarness
{
    public const string BlobName = "coordinator.log";

    public BlobContainerClient Container { get; } = new(azurite.ConnectionString, "c" + Guid.NewGuid().ToString("N"));

    public override FencingMode Fencing => FencingMode.NewcomerTakesOver;

    public override ICoordinatorLog CreateLog() => new BlobCoordinatorLog(Container, BlobName);

    public BlobCoordinatorLog CreateLog(ListLogger logger, string blobName = BlobName) => new(Container, blobName, logger);

    /// <summary>A log whose client runs <paramref name="policy"/> on every try of every request (fast retries).</summary>
    public BlobCoordinatorLog CreateLogWithPolicy(HttpPipelinePolicy policy, ListLogger logger)
    {
        var options = new BlobClientOptions();
        options.Retry.Delay = TimeSpan.FromMilliseconds(10);
        options.AddPolicy(policy, Azure.Core.HttpPipelinePosition.PerRetry);
        var container = new BlobContainerClient(azurite.ConnectionString, Container.Name, options);
        return new BlobCoordinatorLog(container, BlobName, logger);
    }

    public override async ValueTask DisposeAsync() => await Container.DeleteIfExistsAsync();
}
