using System.Buffers;
using System.Text.Json;
using Dse.Coordinator;
using Microsoft.AspNetCore.Diagnostics.HealthChecks;
using Microsoft.AspNetCore.Http;
using Microsoft.AspNetCore.Routing;
using Microsoft.Extensions.Diagnostics.HealthChecks;

namespace Microsoft.AspNetCore.Builder;

/// <summary>Maps the DSE coordinator's endpoints (after <c>AddDseCoordinator</c>).</summary>
public static class DseCoordinatorEndpointRouteBuilderExtensions
{
    /// <summary>
    /// Maps the gRPC service <c>dse.coordinator.v1.Coordinator</c> and the gRPC health service (grpc.health.v1), which
    /// answers SERVING while the coordinator serves or recovers and NOT_SERVING once it stopped, for the service names
    /// "" and "dse.coordinator.v1.Coordinator".
    /// </summary>
    /// <returns>The convention builder of the coordinator service.</returns>
    public static GrpcServiceEndpointConventionBuilder MapDseCoordinator(this IEndpointRouteBuilder endpoints)
    {
        ArgumentNullException.ThrowIfNull(endpoints);
        endpoints.MapGrpcHealthChecksService();
        return endpoints.MapGrpcService<CoordinatorGrpcService>();
    }

    /// <summary>
    /// Maps an HTTP health endpoint: 200 with status Healthy (serving) or Degraded (recovering from its restart), 503
    /// with Unhealthy (stopped serving); the body is a JSON object with the status, a description and the coordinator's
    /// incarnation, epoch, world-line, recovery flag and log. It answers on every endpoint: over HTTP/2 on the gRPC
    /// port, and over HTTP/1.1 on a plain HTTP endpoint such as the host's <c>--health-port</c>.
    /// </summary>
    /// <param name="endpoints">The endpoints.</param>
    /// <param name="pattern">The path; default <c>/healthz</c>.</param>
    /// <returns>The convention builder of the endpoint, for example to require a host or port.</returns>
    public static IEndpointConventionBuilder MapDseCoordinatorHealth(this IEndpointRouteBuilder endpoints, string pattern = "/healthz")
    {
        ArgumentNullException.ThrowIfNull(endpoints);
        return endpoints.MapHealthChecks(pattern, new HealthCheckOptions
        {
            Predicate = static check => check.Name == CoordinatorHealthCheck.Name,
            ResponseWriter = WriteHealthAsync,
        });
    }

    private static async Task WriteHealthAsync(HttpContext context, HealthReport report)
    {
        // Buffered, then written asynchronously: Kestrel refuses synchronous writes.
        var buffer = new ArrayBufferWriter<byte>(512);
        using (var json = new Utf8JsonWriter(buffer))
        {
            json.WriteStartObject();
            json.WriteString("status", report.Status.ToString());
            if (report.Entries.TryGetValue(CoordinatorHealthCheck.Name, out var entry))
            {
                json.WriteString("description", entry.Description);
                foreach (var (key, value) in entry.Data)
                {
                    switch (value)
                    {
                        case long number:
                            json.WriteNumber(key, number);
                            break;
                        case bool flag:
                            json.WriteBoolean(key, flag);
                            break;
                        default:
                            json.WriteString(key, value.ToString());
                            break;
                    }
                }
            }

            json.WriteEndObject();
        }

        context.Response.ContentType = "application/json; charset=utf-8";
        await context.Response.Body.WriteAsync(buffer.WrittenMemory, context.RequestAborted).ConfigureAwait(false);
    }
}
