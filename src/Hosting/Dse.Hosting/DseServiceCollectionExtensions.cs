using Dse;
using Dse.Grpc;
using Dse.Hosting;
using Microsoft.Extensions.Configuration;
using Microsoft.Extensions.DependencyInjection.Extensions;
using Microsoft.Extensions.Options;

namespace Microsoft.Extensions.DependencyInjection;

/// <summary>Registers the DSE runtime in a host.</summary>
public static class DseServiceCollectionExtensions
{
    /// <summary>
    /// Adds the DSE runtime: <see cref="DseHostingOptions"/> bound from the configuration section <c>Dse</c> (then
    /// <paramref name="configure"/>), validated when the host starts; the coordinator they name as the
    /// <see cref="IDseCoordinator"/> singleton (unless one is registered already); the hosted service that connects
    /// the StateObjects at start and persists, commits and disposes them at stop; and <see cref="IDseReadiness"/>.
    /// Register StateObjects on the returned builder. Calling it again returns a builder over the same registrations.
    /// </summary>
    /// <param name="services">The services.</param>
    /// <param name="configure">Sets options in code, after the configuration was bound.</param>
    /// <returns>The builder, for StateObjects, the coordinator and health checks.</returns>
    public static IDseBuilder AddDse(this IServiceCollection services, Action<DseHostingOptions>? configure = null)
    {
        ArgumentNullException.ThrowIfNull(services);
        if (DseRegistry.Find(services) is null)
        {
            var registry = new DseRegistry();
            services.AddSingleton(registry);

            // Bound only when the host has a configuration: a bare service collection keeps the defaults.
            services.AddOptions<DseHostingOptions>()
                .Configure<IServiceProvider>(static (options, provider) => provider.GetService<IConfiguration>()?.GetSection(DseHostingOptions.SectionName).Bind(options))
                .ValidateOnStart();
            services.TryAddEnumerable(ServiceDescriptor.Singleton<IValidateOptions<DseHostingOptions>, DseHostingOptionsValidator>());
            services.TryAddSingleton<IDseCoordinator>(DseCoordinators.FromOptions);
            services.TryAddSingleton<DseStateObjects>();
            services.TryAddSingleton<DseHostedService>();
            services.AddHostedService(static provider => provider.GetRequiredService<DseHostedService>());
            services.TryAddSingleton<IDseReadiness>(static provider => provider.GetRequiredService<DseHostedService>());

            // Null without Dse:Participants: every caller may send a header (interceptors and manual handlers take null).
            services.TryAddSingleton<DseHeaderAuthentication>(static provider => DseServiceIdentity.HeaderAuthentication(provider)!);
        }

        if (configure is not null)
        {
            services.Configure(configure);
        }

        return new DseBuilder(services);
    }
}
