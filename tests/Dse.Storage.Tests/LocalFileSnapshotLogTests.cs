using Dse.Storage.Tests.Infrastructure;

namespace Dse.Storage.Tests;

/// <summary>The snapshot log contract on FASTER's local file device.</summary>
public sealed class LocalFileSnapshotLogTests : SnapshotLogContractTests
{
    protected override DeviceHarness CreateHarness() => new LocalFileHarness();
}
