using Dse.Storage.Tests.Infrastructure;
using Dse.Testing;

namespace Dse.Storage.Tests;

/// <summary>The device contract on the Azure page blob device, against Azurite.</summary>
[Collection(AzuriteCollection.Name)]
[Trait("Category", "Azure")]
public sealed class AzurePageBlobDeviceContractTests(AzuriteFixture azurite) : DeviceContractTests
{
    protected override DeviceHarness CreateHarness() => new AzurePageBlobHarness(azurite);
}
