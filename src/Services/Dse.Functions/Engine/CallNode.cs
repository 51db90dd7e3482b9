namespace Dse.Functions.Engine;

/// <summary>
/// A call's place in its transaction's call graph, fixed when the call is issued and the same on every run of the
/// transaction: its parent, its index among the parent's calls (program order, awaited and one-way alike), whether it
/// is one-way, and how many of the parent's calls the parent had seen complete when it issued this one. The order of
/// aborts and the detection of concurrent access to one entity are functions of these alone, never of timing.
/// </summary>
internal sealed class CallNode
{
    private CallNode(CallNode? parent, int index, bool oneWay, int parentObserved)
    {
        Parent = parent;
        Index = index;
        OneWay = oneWay;
        ParentObserved = parentObserved;
        Depth = parent is null ? 0 : parent.Depth + 1;
        LastOneWayDepth = oneWay ? Depth : parent?.LastOneWayDepth ?? -1;
    }

    /// <summary>The caller's node; null for the transaction's root call.</summary>
    public CallNode? Parent { get; }

    /// <summary>This call's index among its parent's calls, in program order.</summary>
    public int Index { get; }

    /// <summary>Whether this is a one-way call (runs after its parent completes).</summary>
    public bool OneWay { get; }

    /// <summary>How many of the parent's calls (a prefix) the parent had seen complete when it issued this one.</summary>
    public int ParentObserved { get; }

    /// <summary>0 for the root.</summary>
    public int Depth { get; }

    /// <summary>The depth of the deepest one-way call on the path from the root to this node, or -1.</summary>
    public int LastOneWayDepth { get; }

    public static CallNode Root() => new(null, 0, oneWay: false, parentObserved: 0);

    public CallNode Child(int index, bool oneWay, int observed) => new(this, index, oneWay, observed);

    /// <summary>"root/0/2~" style path, for messages and tests (a trailing ~ marks a one-way call).</summary>
    public override string ToString()
    {
        if (Parent is null)
        {
            return "root";
        }

        return $"{Parent}/{Index}{(OneWay ? "~" : "")}";
    }
}

/// <summary>One access to an entity's state by a call: where in the call's body it happened.</summary>
/// <param name="Node">The call.</param>
/// <param name="Observed">How many of the call's own calls it had seen complete (a prefix) at the access.</param>
/// <param name="Issued">How many calls it had issued at the access.</param>
/// <param name="Write">Whether the access wrote the state.</param>
internal readonly record struct StateAccess(CallNode Node, int Observed, int Issued, bool Write);
