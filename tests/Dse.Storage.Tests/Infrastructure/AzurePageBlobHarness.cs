using Azure.Storage.Blobs;
using Dse.Testing;
using FASTER.core;

namespace Dse.Storage.Tests.Infrastructure;

/// <summary>Page blob devices on Azurite, in a container of their own that the harness deletes.</summary>
public sealed class AzurePageBlobHarness(AzuriteFixture azurite) : DeviceHarness
{
    public BlobContainerClient Container { get; } = new(azurite.ConnectionString, "t" + Guid.NewGuid().ToString("N"));

    protected override IDevice CreateDevice() => DseDevices.CreateAzurePageBlob(Container, "segment");

    protected override async ValueTask DisposeStorageAsync() => await Container.DeleteIfExistsAsync();
}
