using Dse;
using Dse.Coordinator.Client;
using Dse.Hosting;
using Microsoft.Extensions.DependencyInjection.Extensions;
using Microsoft.Extensions.Diagnostics.HealthChecks;
using Microsoft.Extensions.Options;

namespace Microsoft.Extensions.DependencyInjection;

/// <summary>Registers StateObjects, chooses the coordinator and adds the health check on an <see cref="IDseBuilder"/>.</summary>
public static class DseBuilderExtensions
{
    /// <summary>The name of the health check <see cref="AddHealthChecks"/> registers: <c>dse</c>.</summary>
    public const string HealthCheckName = "dse";

    /// <summary>
    /// Registers a StateObject as a singleton of type <typeparamref name="T"/>, also resolvable as
    /// <see cref="StateObject"/> (all of them through <c>IEnumerable&lt;StateObject&gt;</c>). The host builds it when it
    /// starts (or when first resolved) by calling <paramref name="factory"/> with <see cref="DseOptions"/> derived from
    /// <see cref="DseHostingOptions"/> (id, group-commit period, mode, heartbeat, the host's logger factory and
    /// <see cref="TimeProvider"/>); the factory may adjust them before passing them to the StateObject, but not the id.
    /// The host connects it at start; it cannot be used before it connected (see <see cref="IDseReadiness"/>). A
    /// StateObject's DisposeAsync must tolerate being called more than once: the host disposes it at stop, the
    /// service provider again when it is disposed.
    /// </summary>
    /// <param name="builder">The DSE builder.</param>
    /// <param name="factory">Builds the StateObject from the service provider and its options.</param>
    /// <param name="objectId">
    /// The StateObject's cluster-unique id; default <c>null</c>: <see cref="DseHostingOptions.ObjectId"/> (configuration
    /// key <c>Dse:ObjectId</c>), the single-object case. A host with several StateObjects gives all but one their own.
    /// </param>
    /// <returns>The builder.</returns>
    /// <exception cref="ArgumentOutOfRangeException"><paramref name="objectId"/> is negative.</exception>
    public static IDseBuilder AddStateObject<T>(this IDseBuilder builder, Func<IServiceProvider, DseOptions, T> factory, long? objectId = null)
        where T : StateObject
    {
        ArgumentNullException.ThrowIfNull(builder);
        ArgumentNullException.ThrowIfNull(factory);
        if (objectId < 0)
        {
            throw new ArgumentOutOfRangeException(nameof(objectId), objectId, "A StateObject's id must be non-negative.");
        }

        var registry = DseRegistry.Of(builder);
        int index = registry.StateObjects.Count;
        registry.StateObjects.Add(new DseStateObjectRegistration(typeof(T), objectId, (provider, options) => factory(provider, options)));

        // Both resolve the one instance DseStateObjects builds for this registration.
        builder.Services.AddSingleton(provider => (T)provider.GetRequiredService<DseStateObjects>().Get(index));
        builder.Services.AddSingleton(provider => provider.GetRequiredService<DseStateObjects>().Get(index));
        return builder;
    }

    /// <summary>
    /// Uses <paramref name="coordinator"/> (for example a journaled <see cref="ClusterCoordinator"/> the application
    /// opened) instead of the one <see cref="DseHostingOptions.Coordinator"/> names. The application keeps owning it.
    /// </summary>
    /// <returns>The builder.</returns>
    public static IDseBuilder UseCoordinator(this IDseBuilder builder, IDseCoordinator coordinator)
    {
        ArgumentNullException.ThrowIfNull(builder);
        ArgumentNullException.ThrowIfNull(coordinator);
        builder.Services.Replace(ServiceDescriptor.Singleton(coordinator));
        return builder;
    }

    /// <summary>
    /// Uses the coordinator <paramref name="factory"/> builds when first needed instead of the one
    /// <see cref="DseHostingOptions.Coordinator"/> names; the service provider disposes it.
    /// </summary>
    /// <returns>The builder.</returns>
    public static IDseBuilder UseCoordinator(this IDseBuilder builder, Func<IServiceProvider, IDseCoordinator> factory)
    {
        ArgumentNullException.ThrowIfNull(builder);
        ArgumentNullException.ThrowIfNull(factory);
        builder.Services.Replace(ServiceDescriptor.Singleton(factory));
        return builder;
    }

    /// <summary>Uses a <see cref="ClusterCoordinator"/> in this process, whatever the configuration says (<c>Dse:Coordinator</c> = <c>in-process</c>).</summary>
    /// <returns>The builder.</returns>
    public static IDseBuilder UseInProcessCoordinator(this IDseBuilder builder)
    {
        ArgumentNullException.ThrowIfNull(builder);
        builder.Services.Configure<DseHostingOptions>(static options => options.Coordinator = DseHostingOptions.InProcessCoordinator);
        return builder.UseCoordinator(DseCoordinators.FromOptions);
    }

    /// <summary>Uses the coordinator host at <paramref name="address"/> over gRPC, whatever the configuration says.</summary>
    /// <param name="builder">The DSE builder.</param>
    /// <param name="address">The coordinator host; an absolute http or https URL.</param>
    /// <param name="clientOptions">
    /// The gRPC client's timeouts, limits and trust; default <see cref="GrpcCoordinatorClientOptions"/>. Without a CA of
    /// their own, <see cref="DseHostingOptions.CoordinatorCa"/> applies.
    /// </param>
    /// <returns>The builder.</returns>
    /// <exception cref="ArgumentException"><paramref name="address"/> is not an absolute http or https URL, or an option is invalid.</exception>
    public static IDseBuilder UseRemoteCoordinator(this IDseBuilder builder, Uri address, GrpcCoordinatorClientOptions? clientOptions = null)
    {
        ArgumentNullException.ThrowIfNull(builder);
        ArgumentNullException.ThrowIfNull(address);
        string value = address.IsAbsoluteUri ? address.AbsoluteUri : address.OriginalString;

        // The same rule as the configuration's, checked now: a mistake in code fails where it was made.
        _ = new DseHostingOptions { Coordinator = value }.ParseCoordinator();
        clientOptions?.Validate();
        builder.Services.Configure<DseHostingOptions>(options => options.Coordinator = value);
        return builder.UseCoordinator(services => new GrpcCoordinatorClient(
            address,
            DseCoordinators.ClientOptions(clientOptions, services.GetRequiredService<IOptions<DseHostingOptions>>().Value)));
    }

    /// <summary>
    /// Adds the health check <c>dse</c> (<see cref="HealthCheckName"/>): Healthy when every StateObject is connected and
    /// commits, and the coordinator answers and is not recovering; Degraded while they connect, while the coordinator
    /// does not answer or recovers from its restart; Unhealthy when a StateObject faulted, cannot connect at all, or
    /// cannot commit (a version it persisted has not committed within <see cref="DseHostingOptions.CommitStallTimeout"/>;
    /// the description carries the error). Map it with <c>MapHealthChecks</c>; a readiness probe should map Degraded
    /// to 503.
    /// </summary>
    /// <param name="builder">The DSE builder.</param>
    /// <param name="tags">Tags of the check, to filter it in endpoints.</param>
    /// <returns>The builder.</returns>
    public static IDseBuilder AddHealthChecks(this IDseBuilder builder, params string[] tags)
    {
        ArgumentNullException.ThrowIfNull(builder);
        if (!builder.Services.Any(static d => d.ServiceType == typeof(DseHealthCheck)))
        {
            builder.Services.AddSingleton<DseHealthCheck>();
            builder.Services.AddHealthChecks().AddCheck<DseHealthCheck>(HealthCheckName, failureStatus: HealthStatus.Unhealthy, tags: tags);
        }

        return builder;
    }
}
