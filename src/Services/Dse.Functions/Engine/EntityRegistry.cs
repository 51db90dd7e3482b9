using System.IO.Hashing;
using System.Runtime.InteropServices;
using System.Text;
using MemoryPack;

namespace Dse.Functions.Engine;

/// <summary>
/// The entity types of one runtime (or serial runner): found by name, by entity interface and by class, with the
/// checks a call's target must pass (the type exists, the key has the interface's key type).
/// </summary>
internal sealed class EntityRegistry
{
    private readonly Dictionary<string, EntityType> _byName = new(StringComparer.Ordinal);
    private readonly Dictionary<Type, EntityType> _byInterface = [];
    private readonly Dictionary<Type, EntityType> _byClass = [];
    private readonly Dictionary<EntityType, ulong> _seeds = [];
    private readonly Dictionary<Type, List<string>>? _ambiguous;

    public EntityRegistry(IEnumerable<Type> entityClasses)
    {
        foreach (Type cls in entityClasses)
        {
            if (_byClass.ContainsKey(cls))
            {
                continue;
            }

            if (!EntityCatalog.TryGetClass(cls, out EntityClassInfo info))
            {
                throw new ArgumentException(
                    $"{cls.FullName} has no generated registration: it must be a non-abstract class deriving from Entity<TKey, TState> in a project that references Dse.Functions.Generators as an analyzer.");
            }

            var type = new EntityType(_byName.Count, info);
            if (!_byName.TryAdd(type.Name, type))
            {
                throw new ArgumentException($"Two entity classes are named {type.Name} ({_byName[type.Name].ClassType.FullName} and {cls.FullName}); give one an [EntityType] name.");
            }

            _byClass.Add(cls, type);
            _seeds.Add(type, XxHash3.HashToUInt64(Encoding.UTF8.GetBytes(type.Name)));
            foreach (Type face in type.Interfaces)
            {
                if (!_byInterface.TryAdd(face, type))
                {
                    // A base interface several classes share (IHotel and IFlight both extending IStock) names no one
                    // entity type: asking for it is refused, asking for the derived ones works.
                    (_ambiguous ??= new Dictionary<Type, List<string>>()).TryAdd(face, [_byInterface[face].Name]);
                    _ambiguous[face].Add(type.Name);
                }
            }
        }
    }

    public IReadOnlyCollection<EntityType> Types => _byName.Values;

    public EntityType? ByName(string name) => _byName.GetValueOrDefault(name);

    public EntityType ForInterface(Type entityInterface)
    {
        if (_ambiguous is not null && _ambiguous.TryGetValue(entityInterface, out List<string>? classes))
        {
            throw new UnknownEntityException(
                $"Entity interface {entityInterface.FullName} is implemented by several registered entity classes ({string.Join(", ", classes)}); ask for an interface only one of them implements.");
        }

        return _byInterface.TryGetValue(entityInterface, out EntityType? type)
            ? type
            : throw new UnknownEntityException($"No entity class registered in this runtime implements {entityInterface.FullName}.");
    }

    public EntityType ForClass(Type entityClass) =>
        _byClass.TryGetValue(entityClass, out EntityType? type)
            ? type
            : throw new UnknownEntityException($"Entity class {entityClass.FullName} is not registered in this runtime.");

    /// <summary>The address of <paramref name="key"/> in <paramref name="type"/>; a key of another type is refused.</summary>
    public EntityAddress Address(EntityType type, object key)
    {
        ArgumentNullException.ThrowIfNull(key);
        if (key.GetType() != type.KeyType)
        {
            throw new EntityArgumentException($"Entity type {type.Name} is keyed by {type.KeyType.Name}, not {key.GetType().Name} (key {key}).");
        }

        return new EntityAddress(type, key, StableHash(_seeds[type], key, type.KeyType));
    }

    /// <summary>The address of a key given as MemoryPack bytes (a request from outside the process).</summary>
    public EntityAddress Address(EntityType type, ReadOnlySpan<byte> key)
    {
        object? decoded;
        try
        {
            decoded = MemoryPackSerializer.Deserialize(type.KeyType, key);
        }
        catch (Exception e) when (e is MemoryPackSerializationException or ArgumentException or InvalidOperationException or IndexOutOfRangeException or OverflowException)
        {
            throw new EntityArgumentException($"The key ({key.Length} bytes) does not deserialize as {type.KeyType.Name}, the key type of {type.Name}: {e.Message}", e);
        }

        return decoded is null
            ? throw new EntityArgumentException($"The key of a call to {type.Name} is null.")
            : Address(type, decoded);
    }

    public T CreateProxy<T>(object key, IEntityCaller caller)
        where T : class, IEntity
    {
        EntityType type = ForInterface(typeof(T));
        if (!EntityCatalog.TryGetProxyFactory(typeof(T), out Func<EntityProxyContext, object> create))
        {
            throw new UnknownEntityException($"Entity interface {typeof(T).FullName} has no generated proxy: its project must reference Dse.Functions.Generators as an analyzer.");
        }

        return (T)create(new EntityProxyContext(Address(type, key), caller));
    }

    private static ulong StableHash(ulong seed, object key, Type keyType)
    {
        switch (key)
        {
            case string s:
                return XxHash3.HashToUInt64(MemoryMarshal.AsBytes(s.AsSpan()), (long)seed);
            case long l:
                return XxHash3.HashToUInt64(MemoryMarshal.AsBytes(new ReadOnlySpan<long>(in l)), (long)seed);
            case int i:
                return XxHash3.HashToUInt64(MemoryMarshal.AsBytes(new ReadOnlySpan<int>(in i)), (long)seed);
            case Guid g:
                return XxHash3.HashToUInt64(MemoryMarshal.AsBytes(new ReadOnlySpan<Guid>(in g)), (long)seed);
            default:
                return XxHash3.HashToUInt64(MemoryPackSerializer.Serialize(keyType, key), (long)seed);
        }
    }
}
