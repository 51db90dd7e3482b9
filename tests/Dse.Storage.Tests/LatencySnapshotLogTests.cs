using Dse.Storage.Tests.Infrastructure;

namespace Dse.Storage.Tests;

/// <summary>The snapshot log contract on a latency-wrapped in-memory device.</summary>
public sealed class LatencySnapshotLogTests : SnapshotLogContractTests
{
    protected override DeviceHarness CreateHarness() => new LatencyHarness();
}
