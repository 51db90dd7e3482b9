using Microsoft.Extensions.DependencyInjection;

namespace Dse.Hosting;

/// <summary>The StateObjects registered with <c>AddStateObject</c>, in order; one per service collection, filled before the host is built.</summary>
internal sealed class DseRegistry
{
    public List<DseStateObjectRegistration> StateObjects { get; } = [];

    /// <summary>The registry <c>AddDse</c> put into <paramref name="services"/>, or <c>null</c> before it was called.</summary>
    public static DseRegistry? Find(IServiceCollection services)
    {
        foreach (var descriptor in services)
        {
            if (descriptor.ServiceType == typeof(DseRegistry) && !descriptor.IsKeyedService)
            {
                return descriptor.ImplementationInstance as DseRegistry;
            }
        }

        return null;
    }
}
