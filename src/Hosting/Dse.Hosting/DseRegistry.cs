using Microsoft.Extensions.DependencyInjection;

namespace Dse.Hosting;

/// <summary>The StateObjects registered with <c>AddStateObject</c>, in order; one per service collection, filled before the host is built.</summary>
internal sealed class DseRegistry
{
    public List<DseStateObjectRegistration> StateObjects { get; } = [];

    /// <summary>
    /// The StateObject types gRPC interceptors were added for, each with the call that added it (for messages); checked
    /// when the host starts, since the interceptor resolves its StateObject only at the first call.
    /// </summary>
    public List<(Type StateObjectType, string Registration)> InterceptorOwners { get; } = [];

    /// <summary>The registry of the service collection <paramref name="builder"/> is over.</summary>
    /// <exception cref="InvalidOperationException"><c>AddDse</c> was not called on it.</exception>
    public static DseRegistry Of(IDseBuilder builder) => Find(builder.Services)
        ?? throw new InvalidOperationException("Call services.AddDse() before registering StateObjects or interceptors on its builder.");

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
