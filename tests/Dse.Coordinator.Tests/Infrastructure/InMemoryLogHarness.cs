namespace Dse.Coordinator.Tests.Infrastructure;

/// <summary>In-memory logs over one store.</summary>
public sealed class InMemoryLogHarness : LogHarness
{
    public InMemoryCoordinatorLogStore Store { get; } = new();

    public override FencingMode Fencing => FencingMode.NewcomerTakesOver;

    public override ICoordinatorLog CreateLog() => new InMemoryCoordinatorLog(Store);
}
