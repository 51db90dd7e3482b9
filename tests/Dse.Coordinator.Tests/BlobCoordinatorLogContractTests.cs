using Dse.Coordinator.Tests.Infrastructure;
using Dse.Testing;

namespace Dse.Coordinator.Tests;

/// <summary>The coordinator log contract on <see cref="BlobCoordinatorLog"/>, against Azurite.</summary>
[Collection(AzuriteCollection.Name)]
[Trait("Category", "Azure")]
public sealed class BlobCoordinatorLogContractTests(AzuriteFixture azurite) : CoordinatorLogContractTests
{
    protected override LogHarness CreateHarness() => new BlobLogHarness(azurite);
}
