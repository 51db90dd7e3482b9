using Dse.Services.Grpc;
using Microsoft.AspNetCore.Routing;

namespace Microsoft.AspNetCore.Builder;

/// <summary>
/// Maps the speculative services' gRPC APIs. Each resolves its store (<see cref="Dse.Services.SpeculativeKv"/> or
/// <see cref="Dse.Services.SpeculativeLog"/>) from the services. The plain ones need a
/// <see cref="Dse.Grpc.DseServerInterceptor"/> on that store (for example
/// <c>services.AddGrpc().AddServiceOptions&lt;SpeculativeKvService&gt;(o =&gt; o.Interceptors.Add&lt;DseServerInterceptor&gt;(kv))</c>);
/// the manual one must be hosted without it. docs/services.md, "gRPC APIs".
/// </summary>
public static class SpeculativeServicesEndpointRouteBuilderExtensions
{
    /// <summary>Maps <c>dse.services.v1.KeyValueService</c> as <see cref="SpeculativeKvService"/> (for the interceptor).</summary>
    /// <returns>The convention builder of the service.</returns>
    public static GrpcServiceEndpointConventionBuilder MapSpeculativeKv(this IEndpointRouteBuilder endpoints)
    {
        ArgumentNullException.ThrowIfNull(endpoints);
        return endpoints.MapGrpcService<SpeculativeKvService>();
    }

    /// <summary>Maps <c>dse.services.v1.KeyValueService</c> as <see cref="ManualSpeculativeKvService"/> (no interceptor).</summary>
    /// <returns>The convention builder of the service.</returns>
    public static GrpcServiceEndpointConventionBuilder MapManualSpeculativeKv(this IEndpointRouteBuilder endpoints)
    {
        ArgumentNullException.ThrowIfNull(endpoints);
        return endpoints.MapGrpcService<ManualSpeculativeKvService>();
    }

    /// <summary>Maps <c>dse.services.v1.LogService</c> as <see cref="SpeculativeLogService"/> (for the interceptor).</summary>
    /// <returns>The convention builder of the service.</returns>
    public static GrpcServiceEndpointConventionBuilder MapSpeculativeLog(this IEndpointRouteBuilder endpoints)
    {
        ArgumentNullException.ThrowIfNull(endpoints);
        return endpoints.MapGrpcService<SpeculativeLogService>();
    }
}
