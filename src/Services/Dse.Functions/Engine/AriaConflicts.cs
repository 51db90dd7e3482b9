namespace Dse.Functions.Engine;

/// <summary>
/// Aria's commit rule without reordering, as Styx applies it per partition and epoch: a transaction aborts when a key
/// it read or wrote was written by a lower TID of the same epoch (a write-after-write or read-after-write
/// dependency on a transaction serialized before it). A write after a lower transaction's read is allowed: the writer
/// serializes after the reader. Transactions that aborted by an exception are left out before the rule runs, so they
/// abort nobody. The committed writers of one key are then at most one, and the commits need no locks.
/// </summary>
internal static class AriaConflicts
{
    /// <summary>The transactions of <paramref name="footprints"/> the rule aborts.</summary>
    /// <typeparam name="TKey">The key type.</typeparam>
    /// <param name="footprints">Each transaction's TID with the keys it read and the keys it wrote (logic aborts already removed).</param>
    /// <returns>The TIDs that abort.</returns>
    public static HashSet<long> Aborts<TKey>(IEnumerable<(long Tid, IEnumerable<TKey> Reads, IEnumerable<TKey> Writes)> footprints)
        where TKey : notnull
    {
        var list = footprints as IReadOnlyCollection<(long Tid, IEnumerable<TKey> Reads, IEnumerable<TKey> Writes)> ?? footprints.ToList();
        var lowestWriter = new Dictionary<TKey, long>();
        foreach ((long tid, _, IEnumerable<TKey> writes) in list)
        {
            foreach (TKey key in writes)
            {
                if (!lowestWriter.TryGetValue(key, out long lowest) || tid < lowest)
                {
                    lowestWriter[key] = tid;
                }
            }
        }

        var aborts = new HashSet<long>();
        foreach ((long tid, IEnumerable<TKey> reads, IEnumerable<TKey> writes) in list)
        {
            if (Touches(reads, tid, lowestWriter) || Touches(writes, tid, lowestWriter))
            {
                aborts.Add(tid);
            }
        }

        return aborts;
    }

    private static bool Touches<TKey>(IEnumerable<TKey> keys, long tid, Dictionary<TKey, long> lowestWriter)
        where TKey : notnull
    {
        foreach (TKey key in keys)
        {
            if (lowestWriter.TryGetValue(key, out long lowest) && lowest < tid)
            {
                return true;
            }
        }

        return false;
    }
}
