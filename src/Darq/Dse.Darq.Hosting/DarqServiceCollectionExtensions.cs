using Dse.Darq;
using Dse.Darq.Grpc;
using Dse.Darq.Hosting;
using Microsoft.Extensions.DependencyInjection.Extensions;
using Microsoft.Extensions.Options;

namespace Microsoft.Extensions.DependencyInjection;

/// <summary>Registers DARQs in a host.</summary>
public static class DarqServiceCollectionExtensions
{
    /// <summary>
    /// Adds a DARQ named <paramref name="name"/>: its <see cref="DarqOptions"/> (named options, set by
    /// <paramref name="configure"/>, checked when the host starts; <see cref="DarqOptions.Name"/> is always
    /// <paramref name="name"/>), opened by a hosted service when the host starts and closed when it stops, resolvable
    /// through <see cref="IDarqResolver"/> (and <see cref="DarqRegistry"/>), and servable over gRPC with
    /// <c>endpoints.MapDarqService()</c> (this registers <c>AddGrpc()</c>). Calling it again with the same name adds
    /// another configure callback to the same DARQ.
    /// </summary>
    /// <param name="services">The services.</param>
    /// <param name="name">The DARQ's name (the <c>darq</c> of its gRPC requests, and the destination name of OUT messages to it).</param>
    /// <param name="configure">Sets the DARQ's devices and options; it runs once, when the host starts.</param>
    /// <returns>The builder, for remote destinations.</returns>
    public static IDarqBuilder AddDarq(this IServiceCollection services, string name, Action<DarqOptions> configure)
    {
        ArgumentNullException.ThrowIfNull(services);
        ArgumentException.ThrowIfNullOrWhiteSpace(name);
        ArgumentNullException.ThrowIfNull(configure);
        var registrations = DarqHostRegistry.Find(services);
        if (registrations is null)
        {
            registrations = new DarqHostRegistry();
            services.AddSingleton(registrations);
            services.TryAddSingleton<DarqRegistry>();
            services.TryAddSingleton<IDarqResolver>(static provider => provider.GetRequiredService<DarqRegistry>());
            services.TryAddEnumerable(ServiceDescriptor.Singleton<IValidateOptions<DarqOptions>, DarqOptionsValidator>());
            services.TryAddSingleton<DarqHostedService>();
            services.AddHostedService(static provider => provider.GetRequiredService<DarqHostedService>());
            services.AddGrpc();
        }

        if (!registrations.Names.Contains(name))
        {
            registrations.Names.Add(name);
            services.AddOptions<DarqOptions>(name)
                .PostConfigure(options => options.Name = name)
                .ValidateOnStart();
        }

        services.Configure(name, configure);
        return new DarqBuilder(services, name);
    }

    /// <summary>
    /// Sends OUT messages addressed to <paramref name="destination"/> (from any DARQ of this host that has no
    /// <see cref="DarqOptions.Destinations"/> of its own) to the DARQ served at <paramref name="address"/>; retried until
    /// that server acknowledges, deduplicated there.
    /// </summary>
    /// <param name="builder">The builder.</param>
    /// <param name="destination">The destination name OUT messages carry.</param>
    /// <param name="address">The remote server (absolute http or https URI).</param>
    /// <param name="remoteName">The DARQ's name on that server; <see langword="null"/> for <paramref name="destination"/>.</param>
    /// <returns>The builder.</returns>
    public static IDarqBuilder AddRemoteDestination(this IDarqBuilder builder, string destination, Uri address, string? remoteName = null)
    {
        ArgumentNullException.ThrowIfNull(builder);
        ArgumentException.ThrowIfNullOrEmpty(destination);
        ArgumentNullException.ThrowIfNull(address);
        if (!address.IsAbsoluteUri || (address.Scheme != Uri.UriSchemeHttp && address.Scheme != Uri.UriSchemeHttps))
        {
            throw new ArgumentException($"The address of remote destination '{destination}' must be an absolute http or https URI (got '{address}').", nameof(address));
        }

        var registrations = DarqHostRegistry.Find(builder.Services)
            ?? throw new InvalidOperationException("AddRemoteDestination needs services.AddDarq(...) first.");
        registrations.RemoteDestinations.RemoveAll(r => r.Name == destination);
        registrations.RemoteDestinations.Add(new DarqHostRegistry.RemoteDestination(destination, address, remoteName ?? destination));
        return builder;
    }
}
