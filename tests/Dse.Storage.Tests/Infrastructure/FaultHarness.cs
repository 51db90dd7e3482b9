using FASTER.core;

namespace Dse.Storage.Tests.Infrastructure;

/// <summary>In-memory devices behind a <see cref="FaultInjectingDevice"/> with no fault armed.</summary>
public sealed class FaultHarness : DeviceHarness
{
    public InMemoryStorage Storage { get; } = new();

    protected override IDevice CreateDevice() => new InMemoryDevice(Storage).WithFaults(new FaultInjectingDeviceOptions { Seed = 99 });
}
