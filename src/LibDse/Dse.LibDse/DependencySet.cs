using System.Collections.Concurrent;
using System.Runtime.CompilerServices;

namespace Dse;

/// <summary>
/// The dependencies of one in-memory version, added to concurrently by actions: per object id, the highest version
/// received. Lookups of known ids are lock-free; a new id takes the dictionary's slow path once.
/// </summary>
internal sealed class DependencySet
{
    private readonly ConcurrentDictionary<long, StrongBox<long>> _map = new();

    public bool IsEmpty => _map.IsEmpty;

    public void Add(long objectId, long version)
    {
        if (!_map.TryGetValue(objectId, out var box))
        {
            box = _map.GetOrAdd(objectId, static (_, v) => new StrongBox<long>(v), version);
        }

        long current = Volatile.Read(ref box.Value);
        while (version > current)
        {
            long seen = Interlocked.CompareExchange(ref box.Value, version, current);
            if (seen == current)
            {
                return;
            }

            current = seen;
        }
    }

    /// <summary>A snapshot; exact when no action runs (the gate is closed).</summary>
    public Dependency[] ToArray()
    {
        var result = new List<Dependency>(_map.Count);
        foreach (var kv in _map)
        {
            result.Add(new Dependency(kv.Key, Volatile.Read(ref kv.Value.Value)));
        }

        result.Sort(static (a, b) => a.ObjectId.CompareTo(b.ObjectId));
        return [.. result];
    }
}
