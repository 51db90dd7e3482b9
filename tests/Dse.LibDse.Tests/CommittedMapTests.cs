namespace Dse.Tests;

public class CommittedMapTests
{
    [Fact]
    public void Snapshot_RandomSetsAndRegistrationsAcrossChunks_EverySnapshotKeepsItsValues()
    {
        var random = new Random(7);
        var builder = new CommittedMap.Builder();
        var current = new Dictionary<long, long>();
        var slots = new List<int>();
        var taken = new List<(CommittedMap Snapshot, Dictionary<long, long> Expected)>();
        for (int op = 0; op < 5000; op++)
        {
            int kind = random.Next(10);
            if (kind == 0 || slots.Count == 0)
            {
                // Ids out of order and sparse, so that the slot is not the id.
                long id = 1000 - (slots.Count * 7);
                slots.Add(builder.Add(id));
                current[id] = 0;
            }
            else if (kind < 7)
            {
                int k = random.Next(slots.Count);
                long version = random.Next(1, 1_000_000);
                builder.Set(slots[k], version);
                current[1000 - (k * 7)] = version;
            }
            else
            {
                taken.Add((builder.Snapshot(), new Dictionary<long, long>(current)));
            }
        }

        Assert.True(slots.Count > 3 * CommittedMap.ChunkSize, "the run must span several chunks");
        foreach (var (snapshot, expected) in taken)
        {
            Assert.Equal(expected.Count, snapshot.Count);
            Assert.Equal(expected.OrderBy(kv => kv.Key), snapshot.OrderBy(kv => kv.Key));
            foreach (var (id, version) in expected)
            {
                Assert.True(snapshot.TryGetValue(id, out long v) && v == version);
                Assert.Equal(version, snapshot[id]);
            }

            Assert.False(snapshot.ContainsKey(1));
            Assert.Equal(expected.Count, snapshot.Keys.Count());
            Assert.Equal(expected.Values.Order(), snapshot.Values.Order());
        }
    }

    [Fact]
    public void Snapshot_Empty_HasNothing()
    {
        var map = new CommittedMap.Builder().Snapshot();

        Assert.Empty(map);
        Assert.False(map.TryGetValue(1, out _));
    }
}
