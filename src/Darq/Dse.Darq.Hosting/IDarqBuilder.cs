using Microsoft.Extensions.DependencyInjection;

namespace Dse.Darq.Hosting;

/// <summary>What <c>services.AddDarq(name, ...)</c> returns: the place to add remote destinations and more DARQs.</summary>
public interface IDarqBuilder
{
    /// <summary>The services the DARQs are registered in.</summary>
    IServiceCollection Services { get; }

    /// <summary>The name of the DARQ the builder was returned for.</summary>
    string Name { get; }
}
