using Dse.Coordinator.Tests.Infrastructure;

namespace Dse.Coordinator.Tests;

/// <summary>The coordinator log contract on <see cref="FileCoordinatorLog"/>.</summary>
public sealed class FileCoordinatorLogContractTests : CoordinatorLogContractTests
{
    protected override LogHarness CreateHarness() => new FileLogHarness();
}
