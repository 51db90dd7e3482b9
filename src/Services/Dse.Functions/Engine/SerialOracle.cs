using MemoryPack;

namespace Dse.Functions.Engine;

/// <summary>
/// The serial oracle (the runtime's proof obligation): checks that a run's outcomes are in the protocol's order, replays them in that order with
/// <see cref="SerialEntityRunner"/> and compares every reply and every entity's final state.
/// </summary>
internal static class SerialOracle
{
    /// <summary>One request as submitted (names and bytes) and the outcome the runtime gave it.</summary>
    public sealed record Submitted(string EntityType, byte[] Key, string Method, byte[] Args, TransactionOutcome Outcome);

    /// <summary>A phase's place within an epoch: logic aborts, then lock-free, then fallback.</summary>
    public static int PhaseRank(TransactionPhase phase) => phase switch
    {
        TransactionPhase.OptimisticLogicAbort => 0,
        TransactionPhase.LockFree => 1,
        TransactionPhase.Fallback => 2,
        _ => throw new InvalidOperationException($"phase {phase} has no place in an epoch"),
    };

    /// <summary>Returns a list of problems (empty when the run is serializable as the protocol claims).</summary>
    public static List<string> Check(
        IReadOnlyList<Submitted> run,
        IReadOnlyList<EpochRecord> records,
        IReadOnlyDictionary<(string Entity, object Key), object?> finalState,
        Action<EntityRegistration> entities)
    {
        var problems = new List<string>();
        var byTid = new Dictionary<long, Submitted>();
        foreach (Submitted s in run)
        {
            if (s.Outcome.Phase == TransactionPhase.Rejected)
            {
                continue;
            }

            if (!byTid.TryAdd(s.Outcome.Tid, s))
            {
                problems.Add($"TID {s.Outcome.Tid} has two outcomes");
            }
        }

        // TIDs match the records, each request once.
        var recordOf = new Dictionary<long, EpochRecord>();
        foreach (EpochRecord record in records)
        {
            for (int i = 0; i < record.Requests.Length; i++)
            {
                recordOf[record.FirstTid + i] = record;
            }
        }

        foreach ((long tid, Submitted s) in byTid)
        {
            if (!recordOf.TryGetValue(tid, out EpochRecord? record))
            {
                problems.Add($"TID {tid} is in no record");
                continue;
            }

            if (record.Requests[tid - record.FirstTid].RequestId != s.Outcome.RequestId)
            {
                problems.Add($"TID {tid} belongs to request {record.Requests[tid - record.FirstTid].RequestId}, outcome says {s.Outcome.RequestId}");
            }

            if (s.Outcome.Epoch < record.Epoch)
            {
                problems.Add($"TID {tid} ended in epoch {s.Outcome.Epoch}, before its record's epoch {record.Epoch}");
            }
        }

        var order = byTid.Values
            .OrderBy(s => s.Outcome.Epoch)
            .ThenBy(s => PhaseRank(s.Outcome.Phase))
            .ThenBy(s => s.Outcome.Tid)
            .ToList();

        var runner = new SerialEntityRunner(entities);
        foreach (Submitted s in order)
        {
            EpochRecord record = recordOf[s.Outcome.Tid];
            EntityType type = runner.Registry.ByName(s.EntityType)!;
            var request = new TransactionRequest(s.Outcome.RequestId, runner.Registry.Address(type, s.Key), s.Method, s.Args);
            TransactionOutcome replay = runner.Replay(request, s.Outcome.Tid, record.Epoch, record.Timestamp, record.Seed, s.Outcome.Phase);
            if (!SameReply(replay, s.Outcome))
            {
                problems.Add($"TID {s.Outcome.Tid} ({s.EntityType}.{s.Method}, epoch {s.Outcome.Epoch}, {s.Outcome.Phase}): runtime replied {Describe(s.Outcome)}, serial replay {Describe(replay)}");
            }
        }

        var expected = runner.Snapshot();
        foreach (((string entity, object key), object? value) in expected)
        {
            if (!finalState.TryGetValue((entity, key), out object? actual) || !SameState(runner.Registry.ByName(entity)!.StateType, actual, value))
            {
                problems.Add($"{entity}({key}): runtime state {actual ?? "(none)"}, serial state {value ?? "(none)"}");
            }
        }

        foreach (((string entity, object key), object? value) in finalState)
        {
            if (!expected.ContainsKey((entity, key)))
            {
                problems.Add($"{entity}({key}): runtime state {value}, serial run never wrote it");
            }
        }

        return problems;
    }

    // States compare by their serialized bytes: a record holding a collection has reference equality on it.
    private static bool SameState(Type stateType, object? a, object? b) =>
        MemoryPackSerializer.Serialize(stateType, a).AsSpan().SequenceEqual(MemoryPackSerializer.Serialize(stateType, b));

    private static bool SameReply(TransactionOutcome a, TransactionOutcome b) =>
        a.Abort is null
            ? b.Abort is null && a.Result.AsSpan().SequenceEqual(b.Result)
            : b.Abort is not null && a.Abort.ExceptionType == b.Abort.ExceptionType && a.Abort.Message == b.Abort.Message;

    private static string Describe(TransactionOutcome o) =>
        o.Abort is null ? $"ok [{Convert.ToHexString(o.Result)}]" : $"{o.Abort.ExceptionType}: {o.Abort.Message}";
}
