using Microsoft.Extensions.Diagnostics.HealthChecks;
using Microsoft.Extensions.Options;

namespace Dse.Hosting;

/// <summary>
/// The StateObjects' health: Unhealthy when one faulted, cannot connect at all, or cannot commit (a version it
/// persisted has not committed within <see cref="DseHostingOptions.CommitStallTimeout"/>, see
/// <see cref="DseCommitWatch"/>): it must be restarted. Degraded while they connect, while the coordinator does not
/// answer, or while it recovers from its own restart. Healthy otherwise. Each probe asks the coordinator for its state
/// (at most <see cref="ProbeTimeout"/>).
/// </summary>
internal sealed class DseHealthCheck(DseHostedService service, IDseCoordinator coordinator, IOptions<DseHostingOptions> options, TimeProvider? timeProvider = null) : IHealthCheck
{
    /// <summary>How long a probe waits for the coordinator before it reports it unreachable.</summary>
    public static readonly TimeSpan ProbeTimeout = TimeSpan.FromSeconds(5);

    public async Task<HealthCheckResult> CheckHealthAsync(HealthCheckContext context, CancellationToken cancellationToken = default)
    {
        var connections = service.Connections;
        if (connections is null)
        {
            return HealthCheckResult.Degraded("Not started: the host has not started the DSE runtime yet.");
        }

        var data = new Dictionary<string, object> { ["coordinator"] = service.CoordinatorName };
        DseConnection? connecting = null;
        foreach (var connection in connections)
        {
            var stateObject = connection.StateObject;
            if (stateObject.Fault is { } fault)
            {
                return HealthCheckResult.Unhealthy($"StateObject {stateObject.Id} faulted: {fault.Message}", fault, data);
            }

            if (connection.Failure is { } failure)
            {
                return HealthCheckResult.Unhealthy($"StateObject {stateObject.Id} cannot connect to coordinator {service.CoordinatorName}: {failure.Message}", failure, data);
            }

            if (!stateObject.IsConnected)
            {
                connecting ??= connection;
                continue;
            }

            data[$"stateObject.{stateObject.Id}"] = $"version {stateObject.CurrentVersion}, committed {stateObject.CommittedVersion}, world-line {stateObject.WorldLine}";
        }

        if (connecting is not null)
        {
            string why = connecting.LastError is { } error ? $"; last error: {error.Message}" : string.Empty;
            return HealthCheckResult.Degraded($"Connecting StateObject {connecting.StateObject.Id} to coordinator {service.CoordinatorName} (attempt {connecting.Attempts}{why}).", data: data);
        }

        ClusterState state;
        try
        {
            state = await coordinator.GetStateAsync(cancellationToken).AsTask().WaitAsync(ProbeTimeout, timeProvider ?? TimeProvider.System, cancellationToken).ConfigureAwait(false);
        }
        catch (Exception ex) when (ex is not OperationCanceledException || !cancellationToken.IsCancellationRequested)
        {
            PauseCommitWatches(connections);
            return HealthCheckResult.Degraded($"The coordinator {service.CoordinatorName} does not answer: {ex.Message}", ex, data);
        }

        data["worldLine"] = state.WorldLine;
        data["epoch"] = state.Epoch;
        if (state.IsRecovering)
        {
            PauseCommitWatches(connections);
            return HealthCheckResult.Degraded($"The coordinator {service.CoordinatorName} is recovering from its restart: commits wait until every participant resynchronized.", data: data);
        }

        // Every watch is checked (and started) on each probe; the first stuck StateObject is the one reported.
        var threshold = options.Value.CommitStallTimeout;
        string? stuck = null;
        foreach (var connection in connections)
        {
            string? result = connection.CommitWatch.Check(threshold, service.Stopping);
            stuck ??= result;
        }

        return stuck is not null
            ? HealthCheckResult.Unhealthy(stuck, data: data)
            : HealthCheckResult.Healthy($"{connections.Count} StateObject(s) connected to coordinator {service.CoordinatorName}.", data);
    }

    /// <summary>The coordinator cannot commit anything now: that time does not count against the StateObjects.</summary>
    private static void PauseCommitWatches(IReadOnlyList<DseConnection> connections)
    {
        foreach (var connection in connections)
        {
            connection.CommitWatch.Pause();
        }
    }
}
