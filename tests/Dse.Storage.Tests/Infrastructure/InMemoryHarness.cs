using FASTER.core;

namespace Dse.Storage.Tests.Infrastructure;

/// <summary>In-memory devices over one shared <see cref="InMemoryStorage"/>.</summary>
public sealed class InMemoryHarness : DeviceHarness
{
    public InMemoryStorage Storage { get; } = new();

    protected override IDevice CreateDevice() => new InMemoryDevice(Storage);
}
