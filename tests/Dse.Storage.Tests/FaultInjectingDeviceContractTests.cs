using Dse.Storage.Tests.Infrastructure;

namespace Dse.Storage.Tests;

/// <summary>The device contract on a fault-injecting in-memory device with no fault armed.</summary>
public sealed class FaultInjectingDeviceContractTests : DeviceContractTests
{
    protected override DeviceHarness CreateHarness() => new FaultHarness();
}
