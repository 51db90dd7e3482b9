using MemoryPack;

namespace Dse.Functions.Engine;

/// <summary>Deep copies of mutable state objects, through MemoryPack (Styx copies state the same way before a call may change it).</summary>
internal static class StateCopy
{
    public static object? Of(object value, Type type) =>
        MemoryPackSerializer.Deserialize(type, MemoryPackSerializer.Serialize(type, value));
}
