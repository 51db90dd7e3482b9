using Dse.Storage.Tests.Infrastructure;

namespace Dse.Storage.Tests;

/// <summary>The snapshot log contract on a fault-injecting in-memory device with no fault armed.</summary>
public sealed class FaultInjectingSnapshotLogTests : SnapshotLogContractTests
{
    protected override DeviceHarness CreateHarness() => new FaultHarness();
}
