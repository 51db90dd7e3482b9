using FASTER.core;

namespace Dse.Storage.Tests.Infrastructure;

/// <summary>In-memory devices behind a <see cref="LatencyDevice"/> with a small real, seeded-jitter latency.</summary>
public sealed class LatencyHarness : DeviceHarness
{
    public InMemoryStorage Storage { get; } = new();

    protected override IDevice CreateDevice() => new InMemoryDevice(Storage).WithLatency(new LatencyDeviceOptions
    {
        WriteLatency = TimeSpan.FromMilliseconds(1),
        ReadLatency = TimeSpan.FromMilliseconds(1),
        Jitter = TimeSpan.FromMilliseconds(1),
        Seed = 1234,
    });
}
