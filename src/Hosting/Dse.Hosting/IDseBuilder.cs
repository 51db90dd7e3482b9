using Microsoft.Extensions.DependencyInjection;

namespace Dse.Hosting;

/// <summary>
/// What <c>services.AddDse()</c> returns: the place to register StateObjects, choose the coordinator and add health
/// checks, through extension methods (<c>DseBuilderExtensions</c>); integrations such as gRPC interceptors add their
/// own extension methods on it.
/// </summary>
public interface IDseBuilder
{
    /// <summary>The services the DSE runtime is registered in.</summary>
    IServiceCollection Services { get; }
}
