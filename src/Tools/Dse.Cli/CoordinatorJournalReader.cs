using System.Text.Json.Nodes;
using Dse.Coordinator;

namespace Dse.Cli;

/// <summary>
/// A coordinator journal in a local file (docs/coordinator-log-format.md), read as the coordinator's recovery scan reads
/// it but without opening the log: a torn tail is reported, not truncated.
/// </summary>
internal static class CoordinatorJournalReader
{
    public static CommandResult Read(string path, byte[] image)
    {
        CoordinatorLogFormat.ScanResult scan;
        try
        {
            scan = CoordinatorLogFormat.Scan(image, $"coordinator journal {CliArguments.Shown(path)}", tolerateTornTail: true);
        }
        catch (InvalidDataException e)
        {
            throw new CliFailureException($"log inspect: {e.Message.ReplaceLineEndings(" ")}", e);
        }

        var text = new List<string> { $"coordinator journal {path}" };
        var records = new JsonArray();
        var lines = new List<string>();
        long offset = 0;
        var incarnations = new List<long>();
        var participants = new SortedSet<long>();
        int decisions = 0;
        for (int i = 0; i < scan.Records.Count; i++)
        {
            var payload = scan.Records[i];
            ClusterJournalEntry entry;
            try
            {
                entry = CoordinatorJournal.Decode(payload.Span, i, $"coordinator journal {CliArguments.Shown(path)}");
            }
            catch (InvalidDataException e)
            {
                throw new CliFailureException($"log inspect: {e.Message.ReplaceLineEndings(" ")}", e);
            }

            var record = new JsonObject { ["index"] = i, ["offset"] = offset };
            string line;
            switch (entry)
            {
                case CoordinatorStartedEntry started:
                    incarnations.Add(started.Incarnation);
                    record["type"] = "CoordinatorStarted";
                    record["incarnation"] = started.Incarnation;
                    line = $"coordinator started, incarnation {started.Incarnation}";
                    break;
                case ParticipantRegisteredEntry registered:
                    participants.Add(registered.ObjectId);
                    record["type"] = "ParticipantRegistered";
                    record["objectId"] = registered.ObjectId;
                    line = $"participant {registered.ObjectId} registered";
                    break;
                case RollbackAcknowledgedEntry ack:
                    record["type"] = "RollbackAcknowledged";
                    record["objectId"] = ack.ObjectId;
                    record["worldLine"] = ack.WorldLine;
                    record["keptThrough"] = ack.KeptThrough;
                    line = $"participant {ack.ObjectId} applied world-line {ack.WorldLine}, kept through version {ack.KeptThrough}";
                    break;
                case RollbackDecidedEntry { Decision: var decision }:
                    decisions++;
                    var cut = decision.Cut.OrderBy(kv => kv.Key).ToList();
                    record["type"] = "RollbackDecided";
                    record["worldLine"] = decision.WorldLine;
                    record["failedObjectId"] = decision.FailedObjectId;
                    record["reason"] = decision.Reason.ToString();
                    record["cut"] = new JsonArray([.. cut.Select(kv => (JsonNode)new JsonObject { ["id"] = kv.Key, ["version"] = kv.Value })]);
                    string who = decision.FailedObjectId == RollbackDecision.ColdStart ? "cold start" : $"{decision.Reason} of {decision.FailedObjectId}";
                    line = $"rollback decided: world-line {decision.WorldLine}, {who}; cut {string.Join(", ", cut.Select(kv => $"{kv.Key}:{kv.Value}"))}";
                    break;
                default:
                    throw new CliFailureException($"log inspect: record {i} of {CliArguments.Shown(path)} is a {entry.GetType().Name}, which this tool does not know.");
            }

            records.Add(record);
            lines.Add($"  #{i} @{offset}: {line}");
            offset += CoordinatorLogFormat.HeaderSize + payload.Length;
        }

        text.Add($"records      {scan.Records.Count} ({scan.ValidLength} bytes)");
        text.Add($"incarnations {(incarnations.Count == 0 ? "none" : string.Join(", ", incarnations))}");
        text.Add($"participants {participants.Count}{(participants.Count == 0 ? string.Empty : ": " + string.Join(", ", participants))}");
        text.Add($"decisions    {decisions}");
        if (scan.TornTail is { } torn)
        {
            text.Add($"torn tail    {torn.Length} bytes at offset {torn.Offset} ({torn.Problem}); the coordinator drops them when it opens the log");
        }

        text.AddRange(lines);
        var json = new JsonObject
        {
            ["kind"] = "coordinator-journal",
            ["path"] = path,
            ["validLength"] = scan.ValidLength,
            ["incarnations"] = new JsonArray([.. incarnations.Select(n => (JsonNode?)n)]),
            ["participants"] = new JsonArray([.. participants.Select(n => (JsonNode?)n)]),
            ["decisions"] = decisions,
            ["tornTail"] = scan.TornTail is { } tail ? new JsonObject { ["offset"] = tail.Offset, ["length"] = tail.Length, ["problem"] = tail.Problem } : null,
            ["records"] = records,
        };
        return new CommandResult(text, json);
    }
}
