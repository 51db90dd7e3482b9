namespace Dse.Coordinator.Tests.Infrastructure;

/// <summary>One log's storage for a test; every <see cref="CreateLog"/> is a new incarnation over the same storage.</summary>
public abstract class LogHarness : IAsyncDisposable
{
    public abstract FencingMode Fencing { get; }

    public abstract ICoordinatorLog CreateLog();

    public virtual ValueTask DisposeAsync() => ValueTask.CompletedTask;
}
