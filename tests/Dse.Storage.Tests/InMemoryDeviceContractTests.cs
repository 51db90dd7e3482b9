using Dse.Storage.Tests.Infrastructure;

namespace Dse.Storage.Tests;

/// <summary>The device contract on the in-memory device.</summary>
public sealed class InMemoryDeviceContractTests : DeviceContractTests
{
    protected override DeviceHarness CreateHarness() => new InMemoryHarness();
}
