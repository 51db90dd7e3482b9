using Microsoft.Extensions.DependencyInjection;

namespace Dse.Darq.Hosting;

/// <summary>The DARQs and remote destinations registered in one service collection, in order; filled before the host is built.</summary>
internal sealed class DarqHostRegistry
{
    /// <summary>The DARQ names <c>AddDarq</c> registered, each once, in registration order.</summary>
    public List<string> Names { get; } = [];

    /// <summary>Destination names mapped to remote servers by <c>AddRemoteDestination</c>.</summary>
    public List<RemoteDestination> RemoteDestinations { get; } = [];

    /// <summary>The registry <c>AddDarq</c> put into <paramref name="services"/>, or <c>null</c> before it was called.</summary>
    public static DarqHostRegistry? Find(IServiceCollection services)
    {
        foreach (var descriptor in services)
        {
            if (descriptor.ServiceType == typeof(DarqHostRegistry) && !descriptor.IsKeyedService)
            {
                return descriptor.ImplementationInstance as DarqHostRegistry;
            }
        }

        return null;
    }

    /// <summary>A destination name served by a DARQ on another server.</summary>
    public sealed record RemoteDestination(string Name, Uri Address, string RemoteName);
}
