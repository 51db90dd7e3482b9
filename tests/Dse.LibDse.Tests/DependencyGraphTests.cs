namespace Dse.Tests;

public class DependencyGraphTests
{
    private static DependencyGraph Graph(params long[] ids)
    {
        var g = new DependencyGraph();
        foreach (var id in ids)
        {
            g.AddParticipant(id);
        }

        return g;
    }

    private static VersionReport V(long version, params Dependency[] deps) => new(version, 0, deps);

    [Fact]
    public void ComputeClosure_Chain_IncludesEverythingPersisted()
    {
        var g = Graph(1, 2);
        g.Add(1, V(1));
        g.Add(2, V(1, new Dependency(1, 1)));

        var c = g.ComputeClosure();

        Assert.Equal(1, c[1]);
        Assert.Equal(1, c[2]);
    }

    [Fact]
    public void ComputeClosure_DependencyOnUnreportedVersion_Dangles()
    {
        var g = Graph(1, 2);
        g.Add(1, V(1));
        g.Add(2, V(1));
        g.Add(2, V(2, new Dependency(1, 2)));

        var c = g.ComputeClosure();

        Assert.Equal(1, c[1]);
        Assert.Equal(1, c[2]);
    }

    [Fact]
    public void ComputeClosure_DependencyOnUnknownParticipant_Dangles()
    {
        var g = Graph(1);
        g.Add(1, V(1, new Dependency(99, 1)));

        Assert.Equal(0, g.ComputeClosure()[1]);
    }

    [Fact]
    public void ComputeClosure_PersistedCycle_IsRecoverable()
    {
        var g = Graph(1, 2);
        g.Add(1, V(1, new Dependency(2, 1)));
        g.Add(2, V(1, new Dependency(1, 1)));

        var c = g.ComputeClosure();

        Assert.Equal(1, c[1]);
        Assert.Equal(1, c[2]);
    }

    [Fact]
    public void ComputeClosure_CycleWithDanglingEdge_ExcludesTheWholeCycle()
    {
        var g = Graph(1, 2, 3);
        g.Add(1, V(1, new Dependency(2, 1)));
        g.Add(2, V(1, new Dependency(1, 1), new Dependency(3, 1)));

        var c = g.ComputeClosure();

        Assert.Equal(0, c[1]);
        Assert.Equal(0, c[2]);
        Assert.Equal(0, c[3]);
    }

    [Fact]
    public void ComputeClosure_TransitiveLoss_CutsEveryDependent()
    {
        var g = Graph(1, 2, 3);
        g.Add(1, V(1));
        g.Add(1, V(2));
        g.Add(2, V(1, new Dependency(1, 2)));
        g.Add(3, V(1));
        g.Add(3, V(2, new Dependency(2, 1)));

        // 1 restarted with only version 1 in storage.
        var cut = g.ComputeClosure(new Dictionary<long, long> { [1] = 1 });

        Assert.Equal(1, cut[1]);
        Assert.Equal(0, cut[2]);
        Assert.Equal(1, cut[3]);
    }

    [Fact]
    public void AdvanceCommitted_MovesMonotonicallyAndDropsCommittedNodes()
    {
        var g = Graph(1, 2);
        g.Add(1, V(1));
        g.Add(2, V(1, new Dependency(1, 2)));
        Assert.True(g.AdvanceCommitted());
        Assert.Equal(1, g.CommittedVersion(1));
        Assert.Equal(0, g.CommittedVersion(2));

        g.Add(1, V(2));
        Assert.True(g.AdvanceCommitted());
        Assert.Equal(1, g.CommittedVersion(2));
        Assert.Equal(0, g.UncommittedCount);
        Assert.False(g.AdvanceCommitted());
        Assert.Equal(ReportOutcome.Duplicate, g.Add(1, V(2)));
    }

    [Fact]
    public void Apply_DecisionBelowCommitted_Throws()
    {
        var g = Graph(1);
        g.Add(1, V(1));
        g.AdvanceCommitted();

        Assert.Throws<InvalidOperationException>(() => g.Apply(new RollbackDecision(1, 1, new Dictionary<long, long> { [1] = 0 })));
    }

    [Fact]
    public void IsStale_VersionAboveLaterCutNotKept_IsStaleUntilAcknowledged()
    {
        var g = Graph(1, 2);
        var decision = new RollbackDecision(1, 1, new Dictionary<long, long> { [1] = 0, [2] = 3 });
        RollbackDecision[] decisions = [decision];

        Assert.True(g.IsStale(2, 5, 0, decisions));
        Assert.False(g.IsStale(2, 3, 0, decisions));
        Assert.False(g.IsStale(2, 5, 1, decisions));

        g.Acknowledge(2, 1, 6);
        Assert.False(g.IsStale(2, 5, 0, decisions));
        Assert.True(g.IsStale(2, 7, 0, decisions));
    }

    [Fact]
    public void Add_UnknownParticipant_Throws()
    {
        Assert.Throws<DseCoordinatorException>(() => Graph().Add(5, V(1)));
    }
}
