using Microsoft.Extensions.Diagnostics.HealthChecks;

namespace Dse.Coordinator;

/// <summary>
/// The coordinator's health: Healthy while it serves, Degraded while it recovers from its own restart (it serves
/// resyncs and connects but holds the boundary and decisions), Unhealthy once it stopped serving (its journal failed,
/// or a newer coordinator fenced it out) and must be restarted.
/// </summary>
internal sealed class CoordinatorHealthCheck(CoordinatorServer server) : IHealthCheck
{
    /// <summary>The registration name; also the gRPC health service name the host maps it to.</summary>
    public const string Name = "dse-coordinator";

    public Task<HealthCheckResult> CheckHealthAsync(HealthCheckContext context, CancellationToken cancellationToken = default)
    {
        var coordinator = server.Coordinator;
        var fault = coordinator.Fault;
        var state = coordinator.State;
        var data = new Dictionary<string, object>
        {
            ["incarnation"] = state.Incarnation,
            ["epoch"] = state.Epoch,
            ["worldLine"] = state.WorldLine,
            ["isRecovering"] = state.IsRecovering,
            ["log"] = server.Log.Description,
        };
        var result = fault is not null
            ? HealthCheckResult.Unhealthy($"Stopped serving: its journal failed ({fault.GetType().Name}: {fault.Message}); restart the coordinator.", fault, data)
            : state.IsRecovering
                ? HealthCheckResult.Degraded("Recovering from its restart: waiting for every registered participant to resync or connect.", data: data)
                : HealthCheckResult.Healthy("Serving.", data);
        return Task.FromResult(result);
    }
}
