using Dse.Coordinator;
using Grpc.AspNetCore.Server;
using Grpc.AspNetCore.Server.Model;
using Microsoft.Extensions.DependencyInjection.Extensions;
using Microsoft.Extensions.Hosting;
using Microsoft.Extensions.Logging;

namespace Microsoft.Extensions.DependencyInjection;

/// <summary>Registers the DSE coordinator: its lifetime, its gRPC service and its health check.</summary>
public static class DseCoordinatorServiceCollectionExtensions
{
    /// <summary>
    /// Adds a durable DSE coordinator served over gRPC (<c>dse.coordinator.v1.Coordinator</c>), the health check
    /// <c>dse-coordinator</c> and the standard gRPC health service (grpc.health.v1) reporting it. When the host starts,
    /// before anything listens, it opens the log from <paramref name="createLog"/> and a <see cref="CoordinatorServer"/>
    /// on it (a fenced log makes the start fail with <see cref="CoordinatorLogFencedException"/>); after the host
    /// stopped it disposes the coordinator, then the log. Map the endpoints with <c>MapDseCoordinator</c> and
    /// <c>MapDseCoordinatorHealth</c>; the open <see cref="CoordinatorServer"/> is a singleton service once the host started.
    /// The coordinator service accepts and sends messages up to <see cref="CoordinatorServerOptions.MaxMessageSize"/>;
    /// with <see cref="CoordinatorServerOptions.StopHostOnFault"/> the host stops once the coordinator stopped serving.
    /// </summary>
    /// <param name="services">The services.</param>
    /// <param name="createLog">Creates the coordinator log (not opened yet); called once, when the host starts.</param>
    /// <param name="configure">Sets options; they are validated when the host starts.</param>
    /// <returns>The gRPC server builder, for service options and interceptors.</returns>
    /// <exception cref="InvalidOperationException">A coordinator was added already; a host serves one.</exception>
    public static IGrpcServerBuilder AddDseCoordinator(this IServiceCollection services, Func<IServiceProvider, ICoordinatorLog> createLog, Action<CoordinatorServerOptions>? configure = null)
    {
        ArgumentNullException.ThrowIfNull(services);
        ArgumentNullException.ThrowIfNull(createLog);
        if (services.Any(d => d.ServiceType == typeof(CoordinatorServerLifetime)))
        {
            throw new InvalidOperationException("AddDseCoordinator was called twice; a host serves one coordinator.");
        }

        var options = new CoordinatorServerOptions();
        configure?.Invoke(options);
        services.AddSingleton(sp => new CoordinatorServerLifetime(sp, createLog, options, sp.GetRequiredService<ILoggerFactory>()));
        services.AddSingleton<IHostedService>(sp => sp.GetRequiredService<CoordinatorServerLifetime>());
        services.TryAddSingleton(sp => sp.GetRequiredService<CoordinatorServerLifetime>().Server);
        services.TryAddSingleton<CoordinatorGrpcService>();
        services.TryAddEnumerable(ServiceDescriptor.Singleton<IServiceMethodProvider<CoordinatorGrpcService>, CoordinatorMethodProvider>());

        // The checks run on every probe rather than from a cache refreshed every 30 s: they only read state.
        services.AddGrpcHealthChecks(health =>
        {
            health.UseHealthChecksCache = false;
            health.Services.Map(CoordinatorMethods.ServiceName, check => check.Name == CoordinatorHealthCheck.Name);
        }).AddCheck<CoordinatorHealthCheck>(CoordinatorHealthCheck.Name);

        // gRPC's 4 MB default is too small for a listing after a long outage; the limit is the coordinator's own.
        return services.AddGrpc().AddServiceOptions<CoordinatorGrpcService>(grpc =>
        {
            grpc.MaxReceiveMessageSize = options.MaxMessageSize;
            grpc.MaxSendMessageSize = options.MaxMessageSize;
        });
    }
}
