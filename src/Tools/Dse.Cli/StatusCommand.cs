using System.Text.Json.Nodes;

namespace Dse.Cli;

/// <summary>
/// <c>dse status</c>: the cluster view a coordinator publishes (its GetState RPC): incarnation, epoch, world-line,
/// whether it recovers, the recoverable boundary per participant, what it wants persisted, and recent decisions.
/// </summary>
internal static class StatusCommand
{
    public const string Usage = $"""
        Usage: dse status --coordinator URL [--tls-ca PATH] [--token-file PATH] [--json]

        Prints the coordinator's cluster state: its incarnation, epoch and world-line, whether it is recovering from its
        own restart, per participant the committed (recoverable) version and any version it is asked to persist, and the
        rollback decisions it retains. Read-only.

        {CoordinatorConnection.OptionsUsage}
        """;

    public static async Task<CommandResult> RunAsync(IReadOnlyList<string> args, CancellationToken cancellationToken)
    {
        const string Command = "status";
        var arguments = CliArguments.Parse(Command, args, positionalCount: 0, options: CoordinatorConnection.Options);
        var (address, options) = CoordinatorConnection.Parse(Command, arguments);
        using var client = CoordinatorConnection.Connect(Command, address, options);
        ClusterState state;
        try
        {
            state = await client.GetStateAsync(cancellationToken);
        }
        catch (DseCoordinatorException ex)
        {
            throw CoordinatorConnection.Failed(Command, address, ex);
        }

        var ids = state.Committed.Keys.Concat(state.Wanted.Keys).Distinct().Order().ToList();
        var text = new List<string>
        {
            $"coordinator  {address}",
            $"incarnation  {state.Incarnation}",
            $"epoch        {state.Epoch}",
            $"world-line   {state.WorldLine}",
            $"state        {(state.IsRecovering ? "recovering (waiting for registered participants to resync)" : "serving")}",
            $"participants {ids.Count}",
        };
        var participants = new JsonArray();
        foreach (long id in ids)
        {
            long committed = state.CommittedVersion(id);
            long? wanted = state.Wanted.TryGetValue(id, out long w) ? w : null;
            text.Add(wanted is { } want ? $"  {id}: committed {committed}, wanted {want}" : $"  {id}: committed {committed}");
            participants.Add(new JsonObject { ["id"] = id, ["committed"] = committed, ["wanted"] = wanted });
        }

        var decisions = new JsonArray();
        text.Add($"decisions    {state.Decisions.Count}");
        foreach (var decision in state.Decisions)
        {
            var cut = decision.Cut.OrderBy(kv => kv.Key).ToList();
            string who = decision.FailedObjectId == RollbackDecision.ColdStart ? "cold start" : $"{decision.Reason} of {decision.FailedObjectId}";
            text.Add($"  world-line {decision.WorldLine}: {who}; cut {string.Join(", ", cut.Select(kv => $"{kv.Key}:{kv.Value}"))}");
            decisions.Add(new JsonObject
            {
                ["worldLine"] = decision.WorldLine,
                ["failedObjectId"] = decision.FailedObjectId,
                ["reason"] = decision.Reason.ToString(),
                ["cut"] = new JsonArray([.. cut.Select(kv => (JsonNode)new JsonObject { ["id"] = kv.Key, ["version"] = kv.Value })]),
            });
        }

        var json = new JsonObject
        {
            ["coordinator"] = address.ToString(),
            ["incarnation"] = state.Incarnation,
            ["epoch"] = state.Epoch,
            ["worldLine"] = state.WorldLine,
            ["recovering"] = state.IsRecovering,
            ["participants"] = participants,
            ["decisions"] = decisions,
        };
        return new CommandResult(text, json);
    }
}
