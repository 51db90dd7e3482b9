using Dse.Coordinator.Tests.Infrastructure;

namespace Dse.Coordinator.Tests;

/// <summary>The coordinator log contract on <see cref="InMemoryCoordinatorLog"/>.</summary>
public sealed class InMemoryCoordinatorLogContractTests : CoordinatorLogContractTests
{
    protected override LogHarness CreateHarness() => new InMemoryLogHarness();
}
