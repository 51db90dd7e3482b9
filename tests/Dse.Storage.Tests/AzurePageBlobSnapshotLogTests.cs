using Dse.Storage.Tests.Infrastructure;
using Dse.Testing;

namespace Dse.Storage.Tests;

/// <summary>The snapshot log contract on the Azure page blob device, against Azurite.</summary>
[Collection(AzuriteCollection.Name)]
[Trait("Category", "Azure")]
public sealed class AzurePageBlobSnapshotLogTests(AzuriteFixture azurite) : SnapshotLogContractTests
{
    protected override DeviceHarness CreateHarness() => new AzurePageBlobHarness(azurite);
}
