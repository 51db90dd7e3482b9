using Microsoft.Extensions.DependencyInjection;

namespace Dse.Hosting;

/// <summary>The <see cref="IDseBuilder"/> over a service collection that <c>AddDse</c> set up.</summary>
internal sealed class DseBuilder(IServiceCollection services) : IDseBuilder
{
    public IServiceCollection Services { get; } = services;
}
