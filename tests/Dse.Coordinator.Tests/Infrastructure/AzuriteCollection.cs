using Dse.Testing;

namespace Dse.Coordinator.Tests.Infrastructure;

/// <summary>Tests that share one Azurite endpoint; they run one after another.</summary>
[CollectionDefinition(Name)]
public sealed class AzuriteCollection : ICollectionFixture<AzuriteFixture>
{
    public const string Name = "Azurite";
}
