using Dse.Testing;

namespace Dse.Darq.Tests;

/// <summary>DARQ tests that share one Azurite endpoint; they run one after another.</summary>
[CollectionDefinition(Name)]
public sealed class DarqAzuriteCollection : ICollectionFixture<AzuriteFixture>
{
    public const string Name = "DarqAzurite";
}
