namespace Dse.Workflows;

/// <summary>
/// Compensations for a saga: register one after each step that succeeded; on a failure, <see cref="CompensateAsync"/>
/// runs them in reverse order, each a step of its own (recorded, retried, replayed like any other).
/// </summary>
/// <remarks>Like the context, a saga is workflow code: create and use it inside the workflow method.</remarks>
public sealed class Saga(WorkflowContext context)
{
    private readonly Stack<(string Name, Func<StepContext, CancellationToken, Task> Step, StepOptions? Options)> _compensations = new();

    /// <summary>Compensations registered and not yet run.</summary>
    public int Count => _compensations.Count;

    /// <summary>Registers the compensation of a step that succeeded. Without <paramref name="options"/>, the engine's <see cref="WorkflowEngineOptions.DefaultCompensationOptions"/> apply.</summary>
    public void AddCompensation(string name, Func<StepContext, CancellationToken, Task> step, StepOptions? options = null)
    {
        ArgumentException.ThrowIfNullOrWhiteSpace(name);
        ArgumentNullException.ThrowIfNull(step);
        _compensations.Push((name, step, options));
    }

    /// <summary>Runs every registered compensation, the last registered first.</summary>
    /// <exception cref="StepFailedException">A compensation failed for good; the ones after it in the order did not run.</exception>
    public async Task CompensateAsync()
    {
        while (_compensations.TryPop(out var compensation))
        {
            await context.CallAsync(compensation.Name, compensation.Step, compensation.Options ?? context.CompensationOptions);
        }
    }
}
