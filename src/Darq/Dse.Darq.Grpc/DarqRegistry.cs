using System.Collections.Concurrent;

namespace Dse.Darq.Grpc;

/// <summary>
/// A map from names to open DARQs that a server hosts (<see cref="IDarqResolver"/>); a DARQ added here is reachable as
/// <see cref="Darq.Name"/>. Adding a name again replaces the DARQ (one reopened after a restart).
/// </summary>
public sealed class DarqRegistry : IDarqResolver
{
    private readonly ConcurrentDictionary<string, Darq> _darqs = new(StringComparer.Ordinal);

    /// <summary>The names of the DARQs hosted now.</summary>
    public ICollection<string> Names => _darqs.Keys;

    /// <summary>Hosts a DARQ under its name, replacing any previous one of that name.</summary>
    /// <param name="darq">The DARQ.</param>
    public void Add(Darq darq)
    {
        ArgumentNullException.ThrowIfNull(darq);
        _darqs[darq.Name] = darq;
    }

    /// <summary>Stops hosting a DARQ; calls naming it fail with NOT_FOUND from then on.</summary>
    /// <param name="name">The DARQ's name.</param>
    /// <returns>Whether the name was hosted.</returns>
    public bool Remove(string name) => _darqs.TryRemove(name, out _);

    /// <inheritdoc />
    public Darq? Resolve(string name)
    {
        ArgumentNullException.ThrowIfNull(name);
        return _darqs.TryGetValue(name, out var darq) ? darq : null;
    }
}
