namespace Dse.Darq.Tests;

/// <summary>The LSN-ordered collections behave as the sorted collections they replace, under random operations.</summary>
public sealed class LsnOrderedMapTests
{
    [Theory]
    [InlineData(1, false)]
    [InlineData(2, false)]
    [InlineData(3, true)]
    [InlineData(4, true)]
    public void Map_RandomOperations_MatchSortedDictionary(int seed, bool outOfOrder)
    {
        var random = new Random(seed);
        var map = new LsnOrderedMap<int>();
        var expected = new SortedDictionary<long, int>();
        long next = 0;
        for (int i = 0; i < 5_000; i++)
        {
            int operation = random.Next(10);
            if (operation < 5)
            {
                // Mostly increasing keys (as log addresses are); sometimes an older key when out of order is allowed.
                long key = outOfOrder && random.Next(4) == 0 ? random.Next((int)next + 1) : (next += 1 + random.Next(3));
                bool added = map.TryAdd(key, i);
                Assert.True(added == expected.TryAdd(key, i), $"seed {seed}, step {i}: TryAdd({key}) disagrees");
            }
            else if (operation < 8 && expected.Count > 0)
            {
                // Remove the oldest mostly (consumption in order), else any key, present or not.
                long key = random.Next(2) == 0 ? expected.Keys.First() : random.Next((int)next + 1);
                bool removed = map.Remove(key, out int value);
                Assert.True(removed == expected.Remove(key, out int expectedValue), $"seed {seed}, step {i}: Remove({key}) disagrees");
                Assert.Equal(expectedValue, value);
            }
            else if (operation < 9)
            {
                // Look up or replace any key, present or not.
                long key = random.Next((int)next + 2) - 1;
                Assert.True(map.ContainsKey(key) == expected.ContainsKey(key), $"seed {seed}, step {i}: ContainsKey({key}) disagrees");
                Assert.True(map.TryGetValue(key, out int value) == expected.TryGetValue(key, out int expectedValue), $"seed {seed}, step {i}: TryGetValue({key}) disagrees");
                Assert.Equal(expectedValue, value);
                if (random.Next(4) == 0 && (outOfOrder || key > next || expected.ContainsKey(key)))
                {
                    map[key] = -i;
                    expected[key] = -i;
                    next = Math.Max(next, key);
                }
            }
            else
            {
                AssertSame(expected, map, $"seed {seed}, step {i}");
            }
        }

        AssertSame(expected, map, $"seed {seed}, end");
        map.Clear();
        Assert.Empty(map);
        Assert.False(map.TryGetFirst(out _));
    }

    [Theory]
    [InlineData(ConsumedLsns.DefaultChunkSize)]
    [InlineData(1)]
    [InlineData(3)]
    [InlineData(64)]
    public void ConsumedLsns_InOrderOutOfOrderAndForgetBelow_MatchSortedSet(int chunkSize)
    {
        // Small chunks put chunk boundaries, whole-chunk truncation and chunk reuse in every few operations.
        var random = new Random(5);
        var set = new ConsumedLsns(chunkSize);
        var expected = new SortedSet<long>();
        long next = 0;
        long begin = 0;
        for (int i = 0; i < 20_000; i++)
        {
            // Mostly in LSN order (the common case), sometimes an older LSN, sometimes a truncation.
            int choice = random.Next(20);
            if (choice == 0)
            {
                begin = Math.Min(next, begin + random.Next(400));
                set.ForgetBelow(begin);
                expected.RemoveWhere(lsn => lsn < begin);
            }
            else
            {
                long lsn = choice < 4 ? begin + random.Next((int)Math.Max(1, next - begin)) : (next += 1 + random.Next(3));
                Assert.Equal(expected.Add(lsn), set.Add(lsn));
            }

            Assert.Equal(expected.Count, set.Count);
            long probe = random.Next((int)next + 10) - 5;
            Assert.Equal(expected.Contains(probe), set.Contains(probe));
        }

        for (long lsn = -5; lsn < next + 5; lsn++)
        {
            Assert.Equal(expected.Contains(lsn), set.Contains(lsn));
        }

        set.ForgetBelow(next + 1);
        Assert.Equal(0, set.Count);
        Assert.True(set.Add(next + 2));
        set.Clear();
        Assert.False(set.Contains(next + 2));
        Assert.Equal(0, set.Count);
        Assert.True(set.Add(1));
        Assert.False(set.Add(1));
        Assert.True(set.Contains(1));
    }

    [Theory]
    [InlineData(1)]
    [InlineData(4)]
    public void ConsumedLsns_LongInOrderRunTruncatedInSteps_KeepsOnlyTheLiveRun(int chunkSize)
    {
        // The darq-step shape: many LSNs in order, with truncation passing them now and then, so chunks fill, empty,
        // are reused and the list's dead front is dropped.
        var set = new ConsumedLsns(chunkSize);
        long next = 0;
        for (int round = 0; round < 50; round++)
        {
            for (int i = 0; i < 37; i++)
            {
                Assert.True(set.Add(next += 8));
            }

            long cut = next - (8 * 5);
            set.ForgetBelow(cut);
            Assert.Equal(6, set.Count);
            Assert.False(set.Contains(cut - 8));
            Assert.True(set.Contains(cut));
            Assert.True(set.Contains(next));
            Assert.False(set.Contains(next + 8));
            Assert.False(set.Add(cut));
        }
    }

    [Fact]
    public void Map_ChangedDuringEnumeration_Throws()
    {
        var map = new LsnOrderedMap<string> { { 1, "a" }, { 2, "b" } };
        Assert.Throws<InvalidOperationException>(() =>
        {
            foreach (var (key, _) in map)
            {
                map.Remove(key);
            }
        });
    }

    private static List<KeyValuePair<long, int>> Listed(LsnOrderedMap<int>.FromCollection entries)
    {
        var list = new List<KeyValuePair<long, int>>();
        foreach (var entry in entries)
        {
            list.Add(entry);
        }

        return list;
    }

    private static void AssertSame(SortedDictionary<long, int> expected, LsnOrderedMap<int> map, string where)
    {
        Assert.True(expected.Count == map.Count, $"{where}: count {map.Count}, expected {expected.Count}");
        Assert.Equal(expected.ToList(), map.ToList());
        Assert.Equal(expected.Values.ToList(), map.Values.ToList());
        Assert.Equal(expected.Keys.ToList(), map.Keys.ToList());
        long from = expected.Count > 0 ? expected.Keys.ElementAt(expected.Count / 2) - 1 : 0;
        Assert.Equal(expected.Where(pair => pair.Key >= from).ToList(), Listed(map.From(from)));
        if (expected.Count > 0)
        {
            Assert.True(map.TryGetFirst(out long first) && first == expected.Keys.First(), $"{where}: first key");
            Assert.True(map.TryGetLast(out long last) && last == expected.Keys.Last(), $"{where}: last key");
            Assert.True(map.TryGetValue(first, out int value) && value == expected[first], $"{where}: value of the first key");
        }
    }
}
