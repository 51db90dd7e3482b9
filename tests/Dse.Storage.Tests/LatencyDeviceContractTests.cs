using Dse.Storage.Tests.Infrastructure;

namespace Dse.Storage.Tests;

/// <summary>The device contract on a latency-wrapped in-memory device.</summary>
public sealed class LatencyDeviceContractTests : DeviceContractTests
{
    protected override DeviceHarness CreateHarness() => new LatencyHarness();
}
