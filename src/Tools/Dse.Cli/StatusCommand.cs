using System.Globalization;
using System.Text.Json.Nodes;

namespace Dse.Cli;

/// <summary>
/// <c>dse status</c>: a coordinator's view of its cluster (its Inspect RPC, and GetState for what it wants persisted):
/// incarnation, epoch, world-line, whether it recovers, every registered participant with its liveness, versions and
/// latest heartbeat statistics, and the retained decisions with what each participant lost.
/// </summary>
internal static class StatusCommand
{
    public const string Usage = $"""
        Usage: dse status --coordinator URL [--tls-ca PATH] [--token-file PATH] [--json]

        Prints the coordinator's view of its cluster: its incarnation, epoch and world-line, whether it is recovering
        from its own restart, every registered participant (removed ones too, with the reason) with how long ago it was
        heard from, its world-line, current, persisted, committed and wanted versions, how many reported versions are
        uncommitted, its barrier waits and queues (from its latest heartbeat), and the rollback decisions the coordinator
        retains with what each participant lost. Read-only.

        {CoordinatorConnection.OptionsUsage}
        """;

    private static readonly string[] Header = ["ID", "STATE", "HEARD", "STATS", "WORLD-LINE", "CURRENT", "PERSISTED", "COMMITTED", "WANTED", "UNCOMMITTED", "WAITS", "P50", "P99"];

    public static async Task<CommandResult> RunAsync(IReadOnlyList<string> args, CancellationToken cancellationToken)
    {
        const string Command = "status";
        var arguments = CliArguments.Parse(Command, args, positionalCount: 0, options: CoordinatorConnection.Options);
        var (address, options) = CoordinatorConnection.Parse(Command, arguments);
        using var client = CoordinatorConnection.Connect(Command, address, options);
        ClusterInspection view;
        ClusterState state;
        try
        {
            // Membership, versions and statistics from Inspect; only Wanted is GetState's, asked right after.
            view = await client.InspectAsync(maxVersionsPerParticipant: 0, cancellationToken);
            state = await client.GetStateAsync(cancellationToken);
        }
        catch (DseCoordinatorException ex)
        {
            throw CoordinatorConnection.Failed(Command, address, ex);
        }

        int removedCount = view.Participants.Count(p => p.Removed);
        var text = new List<string>
        {
            $"coordinator  {address}",
            $"incarnation  {view.Incarnation}",
            $"epoch        {view.Epoch}",
            $"world-line   {view.WorldLine}",
            $"state        {(view.Fault is { } fault ? $"stopped: {fault}" : view.IsRecovering ? "recovering (waiting for registered participants to resync)" : "serving")}",
            $"participants {view.Participants.Count}{(removedCount > 0 ? $" ({removedCount} removed)" : "")}",
        };

        var rows = new List<string[]> { Header };
        var participants = new JsonArray();
        foreach (var p in view.Participants)
        {
            long? wanted = state.Wanted.TryGetValue(p.ObjectId, out long w) ? w : null;
            rows.Add(Row(p, wanted));
            participants.Add(ToJson(p, wanted));
        }

        if (view.Participants.Count > 0)
        {
            text.AddRange(TextTable.Format(rows, "  "));
        }

        foreach (var p in view.Participants.Where(p => p.Removed))
        {
            text.Add($"  {p.ObjectId} removed: {p.RemovedBecause}");
        }

        var queues = view.Participants.Where(p => p.Statistics is not null)
            .SelectMany(p => p.Statistics!.Queues.Select(q => (p.ObjectId, Queue: q)))
            .ToList();
        text.Add($"queues       {queues.Count}");
        foreach (var (id, queue) in queues)
        {
            text.Add($"  {id} {queue.Name}: unconsumed {queue.Unconsumed}, spilled IN {queue.InSpilled}, pending OUT {queue.OutPending}");
        }

        var decisions = new JsonArray();
        text.Add($"decisions    {view.Decisions.Count}");
        foreach (var d in view.Decisions)
        {
            var decision = d.Decision;
            var cut = decision.Cut.OrderBy(kv => kv.Key).ToList();
            string who = decision.FailedObjectId == RollbackDecision.ColdStart ? "cold start" : $"{decision.Reason} of {decision.FailedObjectId}";
            string cuts = string.Join(", ", cut.Select(kv => $"{kv.Key}:{kv.Value}{Lost(kv.Value, d.LostThrough(kv.Key))}"));
            text.Add($"  world-line {decision.WorldLine}: {who}; cut {cuts}{(d.ReportedBefore is null ? "; losses unknown" : "")}");
            decisions.Add(new JsonObject
            {
                ["worldLine"] = decision.WorldLine,
                ["failedObjectId"] = decision.FailedObjectId,
                ["reason"] = decision.Reason.ToString(),
                ["lossKnown"] = d.ReportedBefore is not null,
                ["cut"] = new JsonArray([.. cut.Select(kv => (JsonNode)new JsonObject
                {
                    ["id"] = kv.Key,
                    ["version"] = kv.Value,
                    ["lostThrough"] = d.LostThrough(kv.Key),
                })]),
            });
        }

        var json = new JsonObject
        {
            ["coordinator"] = address.ToString(),
            ["incarnation"] = view.Incarnation,
            ["epoch"] = view.Epoch,
            ["worldLine"] = view.WorldLine,
            ["recovering"] = view.IsRecovering,
            ["fault"] = view.Fault,
            ["participants"] = participants,
            ["decisions"] = decisions,
        };
        return new CommandResult(text, json);
    }

    private static string[] Row(ParticipantInspection p, long? wanted)
    {
        var s = p.Statistics;
        string worldLine = s is not null && s.WorldLine != p.ReportedWorldLine
            ? $"{Number(p.ReportedWorldLine)} (own {Number(s.WorldLine)})"
            : Number(p.ReportedWorldLine);
        var waits = s?.BarrierWaits;
        return
        [
            Number(p.ObjectId),
            p.Removed ? "removed" : "active",
            Age(p.SinceHeard),
            p.StatisticsAge is { } age ? Age(age) : "-",
            worldLine,
            s is null ? "-" : Number(s.CurrentVersion),
            Number(p.Persisted),
            Number(p.Committed),
            wanted is { } want ? Number(want) : "-",
            p.UncommittedCount.ToString(CultureInfo.InvariantCulture),
            waits is null ? "-" : Number(waits.Total),
            waits is null ? "-" : Quantile(waits, 0.5),
            waits is null ? "-" : Quantile(waits, 0.99),
        ];
    }

    private static JsonObject ToJson(ParticipantInspection p, long? wanted)
    {
        JsonObject? statistics = null;
        if (p.Statistics is { } s)
        {
            var waits = s.BarrierWaits;
            statistics = new JsonObject
            {
                ["ageMs"] = (long)(p.StatisticsAge ?? TimeSpan.Zero).TotalMilliseconds,
                ["currentVersion"] = s.CurrentVersion,
                ["worldLine"] = s.WorldLine,
                ["barrierWaits"] = new JsonObject
                {
                    ["total"] = waits.Total,
                    ["sumMs"] = waits.SumMilliseconds,
                    ["p50Ms"] = Finite(waits.QuantileUpperBound(0.5)),
                    ["p99Ms"] = Finite(waits.QuantileUpperBound(0.99)),
                    ["upperBoundsMs"] = new JsonArray([.. waits.UpperBoundsMilliseconds.Select(b => (JsonNode)b)]),
                    ["counts"] = new JsonArray([.. waits.Counts.Select(c => (JsonNode)c)]),
                },
                ["queues"] = new JsonArray([.. s.Queues.Select(q => (JsonNode)new JsonObject
                {
                    ["name"] = q.Name,
                    ["unconsumed"] = q.Unconsumed,
                    ["inSpilled"] = q.InSpilled,
                    ["outPending"] = q.OutPending,
                })]),
            };
        }

        return new JsonObject
        {
            ["id"] = p.ObjectId,
            ["removed"] = p.Removed,
            ["removedBecause"] = p.Removed ? p.RemovedBecause : null,
            ["sinceHeardMs"] = (long)p.SinceHeard.TotalMilliseconds,
            ["reportedWorldLine"] = p.ReportedWorldLine,
            ["committed"] = p.Committed,
            ["persisted"] = p.Persisted,
            ["wanted"] = wanted,
            ["uncommittedCount"] = p.UncommittedCount,
            ["statistics"] = statistics,
        };
    }

    /// <summary>What a decision cost a participant: <c> lost 4-6</c>, or nothing when it lost nothing or the loss is unknown.</summary>
    private static string Lost(long cut, long? lostThrough) => lostThrough switch
    {
        { } through when through == cut + 1 => $" lost {Number(through)}",
        { } through when through > cut + 1 => $" lost {Number(cut + 1)}-{Number(through)}",
        _ => "",
    };

    /// <summary>A quantile as its bucket's bound (<c>&lt;=5 ms</c>), <c>&gt;10 s</c> beyond the last bound, <c>-</c> without waits.</summary>
    private static string Quantile(BarrierWaitDistribution waits, double quantile) => waits.QuantileUpperBound(quantile) switch
    {
        null => "-",
        double bound when double.IsFinite(bound) => "<=" + Milliseconds(bound),
        _ => waits.UpperBoundsMilliseconds.Count > 0 ? ">" + Milliseconds(waits.UpperBoundsMilliseconds[^1]) : "-",
    };

    /// <summary>JSON has no infinity: a quantile beyond the last bound is <c>null</c>, as is one without waits.</summary>
    private static double? Finite(double? bound) => bound is { } b && double.IsFinite(b) ? b : null;

    private static string Milliseconds(double ms) =>
        ms >= 1000 ? (ms / 1000).ToString("0.###", CultureInfo.InvariantCulture) + " s" : ms.ToString("0.###", CultureInfo.InvariantCulture) + " ms";

    private static string Age(TimeSpan age) =>
        age < TimeSpan.FromMinutes(2)
            ? Math.Max(0, age.TotalSeconds).ToString("0.0", CultureInfo.InvariantCulture) + " s"
            : ((long)age.TotalMinutes).ToString(CultureInfo.InvariantCulture) + " min";

    private static string Number(long value) => value.ToString(CultureInfo.InvariantCulture);
}
