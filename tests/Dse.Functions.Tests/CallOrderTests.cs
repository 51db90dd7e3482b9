using Dse.Functions.Engine;

namespace Dse.Functions.Tests;

/// <summary>
/// The orders a call graph defines (<see cref="CallOrder"/>), on hand-built <see cref="CallNode"/> trees: which
/// accesses to one entity an await orders, and which of two failures a transaction reports.
/// </summary>
public class CallOrderTests
{
    private static readonly CallNode Root = CallNode.Root();

    [Fact]
    public void SameCall_ProgramOrder_NeverConflicts()
    {
        StateAccess early = Access(Root, observed: 0, issued: 0, write: true);
        StateAccess later = Access(Root, observed: 1, issued: 2, write: true);
        Assert.True(CallOrder.Before(early, later));
        Assert.False(CallOrder.Before(later, early));
        Assert.False(CallOrder.Conflict(early, later));
    }

    [Fact]
    public void AwaitedChild_ParentAccessAfterObservingIt_ChildIsBefore()
    {
        CallNode child = Root.Child(0, oneWay: false, observed: 0);
        StateAccess inChild = Access(child, write: true);
        StateAccess parentAfter = Access(Root, observed: 1, issued: 1, write: true);

        Assert.True(CallOrder.Before(inChild, parentAfter));
        Assert.False(CallOrder.Before(parentAfter, inChild));
        Assert.False(CallOrder.Conflict(inChild, parentAfter));
    }

    [Fact]
    public void AwaitedChild_ParentAccessBeforeObservingIt_Conflicts()
    {
        CallNode child = Root.Child(0, oneWay: false, observed: 0);
        StateAccess inChild = Access(child, write: true);
        StateAccess parentUnobserved = Access(Root, observed: 0, issued: 1, write: false);

        Assert.False(CallOrder.Before(inChild, parentUnobserved));
        Assert.False(CallOrder.Before(parentUnobserved, inChild));
        Assert.True(CallOrder.Conflict(inChild, parentUnobserved));
        Assert.True(CallOrder.Conflict(parentUnobserved, inChild));
    }

    [Fact]
    public void AwaitedChild_ParentAccessBeforeIssuingIt_ParentIsBefore()
    {
        CallNode child = Root.Child(0, oneWay: false, observed: 0);
        StateAccess parentFirst = Access(Root, observed: 0, issued: 0, write: true);
        StateAccess inChild = Access(child, write: true);

        Assert.True(CallOrder.Before(parentFirst, inChild));
        Assert.False(CallOrder.Conflict(parentFirst, inChild));
    }

    [Fact]
    public void ConcurrentReads_NeverConflict()
    {
        CallNode child = Root.Child(0, oneWay: false, observed: 0);
        StateAccess inChild = Access(child, write: false);
        StateAccess parentUnobserved = Access(Root, observed: 0, issued: 1, write: false);
        Assert.False(CallOrder.Conflict(inChild, parentUnobserved));
    }

    [Fact]
    public void OneWayChild_RunsAfterItsParentsWholeBody()
    {
        CallNode oneWay = Root.Child(0, oneWay: true, observed: 0);
        StateAccess inChild = Access(oneWay, write: true);

        // Even an access the parent makes after issuing the call, without observing anything, is before it.
        StateAccess parentAfterIssue = Access(Root, observed: 0, issued: 1, write: true);
        Assert.True(CallOrder.Before(parentAfterIssue, inChild));
        Assert.False(CallOrder.Before(inChild, parentAfterIssue));
        Assert.False(CallOrder.Conflict(inChild, parentAfterIssue));

        // So is an awaited call the parent issued later, down to its own awaited calls: the parent joined them first.
        CallNode later = Root.Child(1, oneWay: false, observed: 1);
        Assert.True(CallOrder.Before(Access(later.Child(0, false, 0), write: true), inChild));
    }

    [Fact]
    public void AwaitedSiblings_OrderedOnlyWhenTheSecondWasIssuedAfterObservingTheFirst()
    {
        CallNode first = Root.Child(0, oneWay: false, observed: 0);
        CallNode afterObserving = Root.Child(1, oneWay: false, observed: 1);
        CallNode inParallel = Root.Child(1, oneWay: false, observed: 0);
        StateAccess a = Access(first, write: true);

        Assert.True(CallOrder.Before(a, Access(afterObserving, write: true)));
        Assert.False(CallOrder.Before(Access(afterObserving, write: true), a));
        Assert.False(CallOrder.Conflict(a, Access(afterObserving, write: true)));

        Assert.False(CallOrder.Before(a, Access(inParallel, write: true)));
        Assert.False(CallOrder.Before(Access(inParallel, write: true), a));
        Assert.True(CallOrder.Conflict(a, Access(inParallel, write: true)));
        Assert.False(CallOrder.Conflict(Access(first, write: false), Access(inParallel, write: false)));
    }

    [Fact]
    public void SiblingObservedLater_DoesNotOrderAnEarlierIssuedCall()
    {
        // 0 and 1 are issued together; 2 is issued after observing only 0: 1 and 2 are concurrent, 0 is before 2.
        CallNode c0 = Root.Child(0, oneWay: false, observed: 0);
        CallNode c1 = Root.Child(1, oneWay: false, observed: 0);
        CallNode c2 = Root.Child(2, oneWay: false, observed: 1);
        Assert.True(CallOrder.Before(Access(c0, write: true), Access(c2, write: true)));
        Assert.True(CallOrder.Conflict(Access(c1, write: true), Access(c2, write: true)));
    }

    [Fact]
    public void AwaitedGrandchild_IsInTheAwaitedClosure()
    {
        CallNode child = Root.Child(0, oneWay: false, observed: 0);
        CallNode grandchild = child.Child(0, oneWay: false, observed: 0);
        CallNode sibling = Root.Child(1, oneWay: false, observed: 1);
        StateAccess inGrandchild = Access(grandchild, write: true);

        Assert.True(CallOrder.Before(inGrandchild, Access(sibling, write: true)));
        Assert.True(CallOrder.Before(inGrandchild, Access(Root, observed: 1, issued: 1, write: true)));
        Assert.False(CallOrder.Conflict(inGrandchild, Access(sibling, write: true)));

        // Deeper still: every call on the way awaited.
        CallNode deep = grandchild.Child(3, oneWay: false, observed: 0).Child(0, oneWay: false, observed: 0);
        Assert.True(CallOrder.Before(Access(deep, write: true), Access(sibling, write: true)));
    }

    [Fact]
    public void OneWayGrandchild_BreaksTheAwaitedClosure()
    {
        CallNode child = Root.Child(0, oneWay: false, observed: 0);
        CallNode oneWayGrandchild = child.Child(0, oneWay: true, observed: 0);
        CallNode sibling = Root.Child(1, oneWay: false, observed: 1);
        StateAccess inGrandchild = Access(oneWayGrandchild, write: true);

        // It starts when the child completes, concurrently with the child's reply and all that follows it.
        Assert.False(CallOrder.Before(inGrandchild, Access(sibling, write: true)));
        Assert.True(CallOrder.Conflict(inGrandchild, Access(sibling, write: true)));
        Assert.True(CallOrder.Conflict(inGrandchild, Access(Root, observed: 1, issued: 1, write: true)));

        // An awaited call below the one-way grandchild is outside the closure too.
        CallNode below = oneWayGrandchild.Child(0, oneWay: false, observed: 0);
        Assert.True(CallOrder.Conflict(Access(below, write: true), Access(sibling, write: true)));
    }

    [Fact]
    public void OneWaySiblings_AreConcurrent_AwaitedSiblingPrecedesOneWayOne()
    {
        CallNode w0 = Root.Child(0, oneWay: true, observed: 0);
        CallNode w1 = Root.Child(1, oneWay: true, observed: 1);
        Assert.True(CallOrder.Conflict(Access(w0, write: true), Access(w1, write: true)));

        // An awaited call issued after the one-way one still completes before the parent does, so before it.
        CallNode awaited = Root.Child(2, oneWay: false, observed: 2);
        Assert.True(CallOrder.Before(Access(awaited, write: true), Access(w0, write: true)));
        Assert.False(CallOrder.Before(Access(w0, write: true), Access(awaited, write: true)));

        // Unless a one-way call below it escapes the parent's join.
        CallNode escaped = awaited.Child(0, oneWay: true, observed: 0);
        Assert.True(CallOrder.Conflict(Access(escaped, write: true), Access(w0, write: true)));
    }

    [Fact]
    public void CompareFailures_DescendantBeforeAncestor()
    {
        CallNode child = Root.Child(2, oneWay: false, observed: 0);
        CallNode grandchild = child.Child(0, oneWay: true, observed: 0);

        Assert.True(CallOrder.CompareFailures(child, Root) < 0);
        Assert.True(CallOrder.CompareFailures(Root, child) > 0);
        Assert.True(CallOrder.CompareFailures(grandchild, child) < 0);
        Assert.True(CallOrder.CompareFailures(grandchild, Root) < 0);
        Assert.True(CallOrder.CompareFailures(Root, grandchild) > 0);
        Assert.Equal(0, CallOrder.CompareFailures(child, child));
    }

    [Fact]
    public void CompareFailures_LowerIndexFirst_WhateverTheDepth()
    {
        CallNode c0 = Root.Child(0, oneWay: true, observed: 0);
        CallNode c1 = Root.Child(1, oneWay: false, observed: 0);
        Assert.True(CallOrder.CompareFailures(c0, c1) < 0);
        Assert.True(CallOrder.CompareFailures(c1, c0) > 0);

        // Cousins are ordered by their ancestors among the common parent's calls, not by their own index or depth.
        CallNode deepUnder1 = c1.Child(0, false, 0).Child(0, false, 0);
        CallNode under0 = c0.Child(7, false, 0);
        Assert.True(CallOrder.CompareFailures(under0, deepUnder1) < 0);
        Assert.True(CallOrder.CompareFailures(deepUnder1, under0) > 0);
        Assert.True(CallOrder.CompareFailures(c0, deepUnder1) < 0);
    }

    /// <summary>On random trees, the failure order equals post-order by call path (children in index order, then the call).</summary>
    [Fact]
    public void CompareFailures_RandomTrees_IsPostOrderByPath()
    {
        var random = new Random(3);
        for (int tree = 0; tree < 200; tree++)
        {
            var nodes = new List<(CallNode Node, int[] Path)> { (Root, []) };
            int size = random.Next(2, 40);
            while (nodes.Count < size)
            {
                (CallNode parent, int[] path) = nodes[random.Next(nodes.Count)];
                int index = random.Next(0, 6);
                if (nodes.Exists(n => ReferenceEquals(n.Node.Parent, parent) && n.Node.Index == index))
                {
                    continue;
                }

                nodes.Add((parent.Child(index, random.Next(2) == 0, observed: 0), [.. path, index]));
            }

            foreach ((CallNode a, int[] pa) in nodes)
            {
                foreach ((CallNode b, int[] pb) in nodes)
                {
                    Assert.True(
                        Math.Sign(CallOrder.CompareFailures(a, b)) == PostOrder(pa, pb),
                        $"tree {tree}: {a} vs {b} gave {CallOrder.CompareFailures(a, b)}");
                }
            }
        }
    }

    [Fact]
    public void CallNode_ToString_MarksOneWayCalls()
    {
        CallNode node = Root.Child(0, false, 0).Child(2, true, 1);
        Assert.Equal("root/0/2~", node.ToString());
        Assert.Equal(2, node.Depth);
        Assert.Equal(2, node.LastOneWayDepth);
        Assert.Equal(2, node.Child(1, false, 0).LastOneWayDepth);
        Assert.Equal(-1, Root.Child(0, false, 0).LastOneWayDepth);
    }

    private static StateAccess Access(CallNode node, bool write) => new(node, 0, 0, write);

    private static StateAccess Access(CallNode node, int observed, int issued, bool write) => new(node, observed, issued, write);

    private static int PostOrder(int[] a, int[] b)
    {
        for (int i = 0; i < Math.Min(a.Length, b.Length); i++)
        {
            if (a[i] != b[i])
            {
                return a[i] < b[i] ? -1 : 1;
            }
        }

        return b.Length.CompareTo(a.Length);
    }
}
