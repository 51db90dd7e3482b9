using System.Collections.Frozen;

namespace Dse.Functions.Engine;

/// <summary>An entity class registered in one runtime: its name, index, key and state types, and its methods.</summary>
internal sealed class EntityType
{
    private readonly Func<object> _create;

    public EntityType(int index, EntityClassInfo info)
    {
        Index = index;
        Name = info.Name;
        ClassType = info.ClassType;
        KeyType = info.KeyType;
        StateType = info.StateType;
        _create = info.Create;
        Interfaces = info.Interfaces;
        var methods = new Dictionary<string, EntityMethod>(StringComparer.Ordinal);
        foreach (EntityMethod method in info.Methods)
        {
            if (!methods.TryAdd(method.Name, method))
            {
                throw new ArgumentException($"Entity type {Name} has two methods named {method.Name}; entity methods cannot be overloaded.");
            }
        }

        Methods = methods.ToFrozenDictionary(StringComparer.Ordinal);
        CopyStateOnRead = NeedsCopy(StateType);
    }

    public int Index { get; }

    public string Name { get; }

    public Type ClassType { get; }

    public Type KeyType { get; }

    public Type StateType { get; }

    public IReadOnlyList<Type> Interfaces { get; }

    public FrozenDictionary<string, EntityMethod> Methods { get; }

    /// <summary>
    /// Whether a state read hands out a copy: true for a mutable class, so that a change in place never reaches the
    /// snapshot other transactions read. Immutable records, strings and plain value types are shared.
    /// </summary>
    public bool CopyStateOnRead { get; }

    public IEntityBinding CreateInstance() => (IEntityBinding)_create();

    public override string ToString() => Name;

    private static bool NeedsCopy(Type state)
    {
        if (state.IsValueType || state == typeof(string))
        {
            return false;
        }

        // A record class with init-only properties is treated as immutable (the programming model's advice); any
        // other class is copied on read.
        bool isRecord = state.GetMethod("<Clone>$") is not null;
        return !isRecord;
    }
}
