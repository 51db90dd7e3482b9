using Microsoft.Extensions.DependencyInjection;

namespace Dse.Darq.Hosting;

/// <summary>The <see cref="IDarqBuilder"/> over a service collection that <c>AddDarq</c> set up.</summary>
internal sealed class DarqBuilder(IServiceCollection services, string name) : IDarqBuilder
{
    public IServiceCollection Services { get; } = services;

    public string Name { get; } = name;
}
