namespace Dse.Coordinator.Tests.Infrastructure;

/// <summary>Field-by-field equality of LibDse's cluster records, as they must survive the wire.</summary>
public static class StateAssert
{
    public static void Same(ClusterState expected, ClusterState actual)
    {
        Assert.Equal(expected.Epoch, actual.Epoch);
        Assert.Equal(expected.WorldLine, actual.WorldLine);
        Assert.Equal(expected.Incarnation, actual.Incarnation);
        Assert.Equal(expected.IsRecovering, actual.IsRecovering);
        Assert.Equal(Sorted(expected.Committed), Sorted(actual.Committed));
        Assert.Equal(Sorted(expected.Wanted), Sorted(actual.Wanted));
        Assert.Equal(expected.Decisions.Count, actual.Decisions.Count);
        for (int i = 0; i < expected.Decisions.Count; i++)
        {
            Same(expected.Decisions[i], actual.Decisions[i]);
        }
    }

    public static void Same(RollbackDecision expected, RollbackDecision actual)
    {
        Assert.Equal(expected.WorldLine, actual.WorldLine);
        Assert.Equal(expected.FailedObjectId, actual.FailedObjectId);
        Assert.Equal(expected.Reason, actual.Reason);
        Assert.Equal(Sorted(expected.Cut), Sorted(actual.Cut));
    }

    public static KeyValuePair<long, long>[] Sorted(IReadOnlyDictionary<long, long> map) => [.. map.OrderBy(kv => kv.Key)];
}
