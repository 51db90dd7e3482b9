using Microsoft.Extensions.DependencyInjection;
using Microsoft.Extensions.Logging;
using Microsoft.Extensions.Options;

namespace Dse.Hosting;

/// <summary>
/// Builds each registered StateObject once per service provider, with the <see cref="DseOptions"/> the hosting options
/// give it; both its own type and <see cref="StateObject"/> resolve to that one instance.
/// </summary>
internal sealed class DseStateObjects(IServiceProvider services, DseRegistry registry, IOptions<DseHostingOptions> options)
{
    // Guards _instances; a factory may resolve another StateObject (Lock is reentrant on the same thread).
    private readonly Lock _lock = new();
    private readonly StateObject?[] _instances = new StateObject?[registry.StateObjects.Count];

    /// <summary>Every registered StateObject, in registration order; builds the ones not built yet.</summary>
    public IReadOnlyList<StateObject> All()
    {
        var all = new StateObject[_instances.Length];
        for (int i = 0; i < all.Length; i++)
        {
            all[i] = Get(i);
        }

        return all;
    }

    /// <summary>The StateObject of registration <paramref name="index"/>.</summary>
    /// <exception cref="InvalidOperationException">Its factory returned null or a StateObject with another id.</exception>
    public StateObject Get(int index)
    {
        lock (_lock)
        {
            return _instances[index] ??= Create(registry.StateObjects[index]);
        }
    }

    private StateObject Create(DseStateObjectRegistration registration)
    {
        var hosting = options.Value;
        var dse = hosting.ToDseOptions(
            registration.EffectiveId(hosting),
            services.GetService<ILoggerFactory>(),
            services.GetService<TimeProvider>() ?? TimeProvider.System);
        long id = dse.ObjectId;
        var stateObject = registration.Factory(services, dse)
            ?? throw new InvalidOperationException($"The factory of StateObject {registration.Describe()} returned null.");
        if (stateObject.Id != id)
        {
            throw new InvalidOperationException($"The factory of StateObject {registration.Describe()} built one with id {stateObject.Id} instead of {id}; build it with the DseOptions the factory is given.");
        }

        return stateObject;
    }
}
