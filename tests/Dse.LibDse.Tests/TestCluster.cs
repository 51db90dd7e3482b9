namespace Dse.Tests;

/// <summary>Helpers to build small clusters of <see cref="MemoryStateObject"/>s around one in-process coordinator.</summary>
internal static class TestCluster
{
    public static async Task<MemoryStateObject> ConnectAsync(ClusterCoordinator coordinator, long id, MemoryVersionStore? store = null, bool speculative = true, bool background = false)
    {
        var so = MemoryStateObject.Create(id, store, background, speculative);
        await so.ConnectAsync(coordinator);
        return so;
    }

    /// <summary>Runs a one-event action that produces a message header.</summary>
    public static DseHeader Send(MemoryStateObject from, long eventId)
    {
        Assert.True(from.TryStartLocalAction());
        from.Record(eventId);
        return from.EndAction();
    }

    /// <summary>Consumes a message (waiting as the protocol requires); returns whether it was accepted.</summary>
    public static async Task<bool> ReceiveAsync(MemoryStateObject to, DseHeader header, long eventId)
    {
        if (!await to.StartActionAsync(header))
        {
            return false;
        }

        to.Record(eventId);
        to.EndAction();
        return true;
    }

    /// <summary>Persists, makes durable and refreshes every object, until nothing changes.</summary>
    public static async Task SettleAsync(params MemoryStateObject[] objects)
    {
        for (int round = 0; round < 4; round++)
        {
            foreach (var so in objects)
            {
                await so.AdvanceVersionAsync();
                so.Store.CompleteOldest();
            }

            foreach (var so in objects)
            {
                await so.RefreshAsync();
            }
        }
    }
}
