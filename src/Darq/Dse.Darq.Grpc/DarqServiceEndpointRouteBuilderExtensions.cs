using Dse.Darq.Grpc;
using Microsoft.AspNetCore.Routing;

namespace Microsoft.AspNetCore.Builder;

/// <summary>Maps DARQ's gRPC API (docs/darq-grpc.md).</summary>
public static class DarqServiceEndpointRouteBuilderExtensions
{
    /// <summary>
    /// Maps <c>dse.darq.v1.DarqService</c> as <see cref="DarqGrpcService"/>. It needs <c>services.AddGrpc()</c> and an
    /// <see cref="IDarqResolver"/> in the services (a <see cref="DarqRegistry"/>, or the one <c>services.AddDarq(...)</c> registers).
    /// </summary>
    /// <param name="endpoints">The endpoints.</param>
    /// <returns>The convention builder of the service.</returns>
    public static GrpcServiceEndpointConventionBuilder MapDarqService(this IEndpointRouteBuilder endpoints)
    {
        ArgumentNullException.ThrowIfNull(endpoints);
        return endpoints.MapGrpcService<DarqGrpcService>();
    }
}
