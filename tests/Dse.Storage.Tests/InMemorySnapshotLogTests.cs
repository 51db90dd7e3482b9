using Dse.Storage.Tests.Infrastructure;

namespace Dse.Storage.Tests;

/// <summary>The snapshot log contract on the in-memory device.</summary>
public sealed class InMemorySnapshotLogTests : SnapshotLogContractTests
{
    protected override DeviceHarness CreateHarness() => new InMemoryHarness();
}
