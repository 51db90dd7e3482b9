namespace Dse.Functions.Engine;

/// <summary>
/// The orders a transaction's call graph defines, computed from <see cref="CallNode"/>s only: which accesses are
/// ordered by awaits (happens-before), and which of two failed calls comes first.
/// </summary>
internal static class CallOrder
{
    /// <summary>
    /// Whether two accesses to one entity conflict: at least one writes, and no await orders them. A pair that
    /// conflicts makes the transaction's result depend on timing, so it aborts.
    /// </summary>
    public static bool Conflict(in StateAccess x, in StateAccess y) =>
        (x.Write || y.Write) && !ReferenceEquals(x.Node, y.Node) && !Before(x, y) && !Before(y, x);

    /// <summary>Whether access <paramref name="x"/> happens before access <paramref name="y"/> on every run.</summary>
    public static bool Before(in StateAccess x, in StateAccess y)
    {
        CallNode a = x.Node;
        CallNode b = y.Node;
        if (ReferenceEquals(a, b))
        {
            // One body runs in program order.
            return x.Issued < y.Issued || (x.Issued == y.Issued && x.Observed <= y.Observed);
        }

        if (IsAncestor(a, b))
        {
            // x is in the body of y's ancestor: before y when the call leading to y was issued after x, or is one-way
            // (one-way calls start after their caller has completed).
            CallNode child = ChildToward(a, b);
            return child.OneWay || child.Index >= x.Issued;
        }

        if (IsAncestor(b, a))
        {
            // y is in the body of x's ancestor: x is before y when the call leading to x is awaited all the way down
            // to x and the ancestor had seen it complete at y.
            CallNode child = ChildToward(b, a);
            return child.Index < y.Observed && InAwaitedClosure(child, a);
        }

        (CallNode ci, CallNode cj) = ChildrenOfCommonAncestor(a, b);
        if (ci.OneWay)
        {
            // A one-way call starts after its parent completed, so after every awaited call of the parent; another
            // one-way call of the parent is concurrent with it.
            return false;
        }

        if (cj.OneWay)
        {
            // The parent completes, joining every awaited call, before its one-way calls start.
            return InAwaitedClosure(ci, a);
        }

        // Both awaited: ci's subtree is before cj's when the parent had seen ci complete when it issued cj.
        return ci.Index < cj.ParentObserved && InAwaitedClosure(ci, a);
    }

    /// <summary>
    /// The order in which a transaction reports failures: a call's failure comes before its caller's (the caller
    /// failed because of it, or later), and between calls of one parent, the one issued first comes first.
    /// </summary>
    /// <returns>Negative when <paramref name="a"/> comes first.</returns>
    public static int CompareFailures(CallNode a, CallNode b)
    {
        if (ReferenceEquals(a, b))
        {
            return 0;
        }

        CallNode ua = a;
        CallNode ub = b;
        while (ua.Depth > ub.Depth)
        {
            ua = ua.Parent!;
        }

        while (ub.Depth > ua.Depth)
        {
            ub = ub.Parent!;
        }

        if (ReferenceEquals(ua, ub))
        {
            // One is the other's ancestor: the descendant's failure comes first.
            return a.Depth > b.Depth ? -1 : 1;
        }

        while (!ReferenceEquals(ua.Parent, ub.Parent))
        {
            ua = ua.Parent!;
            ub = ub.Parent!;
        }

        return ua.Index.CompareTo(ub.Index);
    }

    private static bool IsAncestor(CallNode ancestor, CallNode node)
    {
        CallNode n = node;
        while (n.Depth > ancestor.Depth)
        {
            n = n.Parent!;
        }

        return ReferenceEquals(n, ancestor) && !ReferenceEquals(node, ancestor);
    }

    private static CallNode ChildToward(CallNode ancestor, CallNode descendant)
    {
        CallNode n = descendant;
        while (!ReferenceEquals(n.Parent, ancestor))
        {
            n = n.Parent!;
        }

        return n;
    }

    private static (CallNode Ci, CallNode Cj) ChildrenOfCommonAncestor(CallNode a, CallNode b)
    {
        CallNode ua = a;
        CallNode ub = b;
        while (ua.Depth > ub.Depth)
        {
            ua = ua.Parent!;
        }

        while (ub.Depth > ua.Depth)
        {
            ub = ub.Parent!;
        }

        while (!ReferenceEquals(ua.Parent, ub.Parent))
        {
            ua = ua.Parent!;
            ub = ub.Parent!;
        }

        return (ua, ub);
    }

    // Whether every call from `top` down to `node` is awaited: then `node`'s work is done when `top` has completed.
    private static bool InAwaitedClosure(CallNode top, CallNode node) => !top.OneWay && node.LastOneWayDepth < top.Depth;
}
