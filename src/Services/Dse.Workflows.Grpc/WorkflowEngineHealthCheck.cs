using Microsoft.Extensions.Diagnostics.HealthChecks;

namespace Dse.Workflows.Grpc;

/// <summary>
/// The workflow engine's health (check <c>dse-workflows</c>): Unhealthy when it could not start; Degraded until it has
/// loaded its history (the DSE runtime connects the log first) and while it reloads it after a rollback; Healthy when it
/// serves.
/// </summary>
internal sealed class WorkflowEngineHealthCheck(WorkflowEngineHostedService service) : IHealthCheck
{
    public Task<HealthCheckResult> CheckHealthAsync(HealthCheckContext context, CancellationToken cancellationToken = default)
    {
        if (service.Failure is { } failure)
        {
            return Task.FromResult(HealthCheckResult.Unhealthy($"The workflow engine could not start: {failure.Message}", failure));
        }

        if (service.Engine is not { } engine)
        {
            return Task.FromResult(HealthCheckResult.Degraded("Not started: the host has not started the workflow engine yet."));
        }

        var data = new Dictionary<string, object> { ["generations"] = engine.Generations };
        if (engine.WhenReadyAsync(CancellationToken.None).IsCompletedSuccessfully)
        {
            return Task.FromResult(HealthCheckResult.Healthy($"The workflow engine serves (history loaded {engine.Generations} time(s)).", data));
        }

        return Task.FromResult(service.IsStarted
            ? HealthCheckResult.Degraded("The workflow engine is reloading its history after a rollback of its log; calls wait until it has.", data: data)
            : HealthCheckResult.Degraded("The workflow engine has not loaded its history yet: it starts once the DSE runtime connected its log.", data: data));
    }
}
