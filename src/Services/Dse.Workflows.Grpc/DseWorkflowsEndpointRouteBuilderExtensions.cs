using Dse.Grpc;
using Dse.Hosting;
using Dse.Workflows.Grpc;
using Grpc.AspNetCore.Server;
using Microsoft.AspNetCore.Routing;
using Microsoft.Extensions.DependencyInjection;
using Microsoft.Extensions.Options;

namespace Microsoft.AspNetCore.Builder;

/// <summary>Maps the workflow engine's gRPC API.</summary>
public static class DseWorkflowsEndpointRouteBuilderExtensions
{
    /// <summary>
    /// Maps <c>dse.workflows.v1.WorkflowService</c> as <see cref="WorkflowGrpcService"/>, over the engine
    /// <c>AddDseWorkflows</c> registered. The service runs DSE by hand, so it must not run behind a
    /// <see cref="DseServerInterceptor"/>: a host whose other services are speculative wires them one by one with
    /// <c>AddGrpcInterceptors&lt;TService, TStateObject&gt;()</c>.
    /// </summary>
    /// <returns>The convention builder of the service.</returns>
    /// <exception cref="InvalidOperationException">A DSE server interceptor applies to every service of the host, or to this one.</exception>
    public static GrpcServiceEndpointConventionBuilder MapDseWorkflows(this IEndpointRouteBuilder endpoints)
    {
        ArgumentNullException.ThrowIfNull(endpoints);
        var all = endpoints.ServiceProvider.GetRequiredService<IOptions<GrpcServiceOptions>>().Value.Interceptors;
        var own = endpoints.ServiceProvider.GetRequiredService<IOptions<GrpcServiceOptions<WorkflowGrpcService>>>().Value.Interceptors;
        if (all.Any(IsDseInterceptor) || own.Any(IsDseInterceptor))
        {
            throw new InvalidOperationException(
                "MapDseWorkflows serves a service that runs DSE by hand, but a DSE server interceptor applies to it (AddGrpcInterceptors<TStateObject>() "
                + "intercepts every service of the host). Make the host's other services speculative one by one with AddGrpcInterceptors<TService, TStateObject>().");
        }

        return endpoints.MapGrpcService<WorkflowGrpcService>();
    }

    private static bool IsDseInterceptor(InterceptorRegistration registration) =>
        typeof(DseServerInterceptor).IsAssignableFrom(registration.Type)
        || (registration.Type.IsGenericType && registration.Type.GetGenericTypeDefinition() == typeof(DseServerInterceptor<>));
}
