using System.Text.Json;

namespace Dse.Coordinator.Dashboard;

/// <summary>Writes a <see cref="ClusterInspection"/> as the JSON the page reads (the snapshot and each event's data).</summary>
internal static class DashboardView
{
    /// <summary>Writes the view: the coordinator, its participants with their versions, and its decisions with their losses.</summary>
    /// <param name="json">Where to write.</param>
    /// <param name="view">The coordinator's view.</param>
    /// <param name="operatorName">The authenticated operator, or <c>null</c> (read-only).</param>
    /// <param name="removalAvailable">Whether the coordinator has credentials, so that an operator could remove participants.</param>
    /// <param name="now">The time of the view.</param>
    public static void Write(Utf8JsonWriter json, ClusterInspection view, string? operatorName, bool removalAvailable, DateTimeOffset now)
    {
        json.WriteStartObject();
        json.WriteNumber("time", now.ToUnixTimeMilliseconds());
        json.WriteNumber("incarnation", view.Incarnation);
        json.WriteNumber("epoch", view.Epoch);
        json.WriteNumber("worldLine", view.WorldLine);
        json.WriteBoolean("recovering", view.IsRecovering);
        json.WriteString("fault", view.Fault);
        json.WriteString("operator", operatorName);
        json.WriteBoolean("removalAvailable", removalAvailable);

        json.WriteStartArray("participants");
        foreach (var p in view.Participants)
        {
            json.WriteStartObject();
            json.WriteNumber("id", p.ObjectId);
            json.WriteBoolean("removed", p.Removed);
            json.WriteString("removedBecause", p.RemovedBecause);
            json.WriteNumber("sinceHeardMs", (long)p.SinceHeard.TotalMilliseconds);
            json.WriteNumber("committed", p.Committed);
            json.WriteNumber("persisted", p.Persisted);
            json.WriteNumber("worldLine", p.ReportedWorldLine);
            json.WriteNumber("uncommittedCount", p.UncommittedCount);
            json.WriteStartArray("uncommitted");
            foreach (var v in p.Uncommitted)
            {
                json.WriteStartObject();
                json.WriteNumber("version", v.Version);
                json.WriteNumber("worldLine", v.WorldLine);
                json.WriteStartArray("dependencies");
                foreach (var d in v.Dependencies)
                {
                    json.WriteStartObject();
                    json.WriteNumber("id", d.ObjectId);
                    json.WriteNumber("version", d.Version);
                    json.WriteEndObject();
                }

                json.WriteEndArray();
                json.WriteEndObject();
            }

            json.WriteEndArray();
            json.WriteEndObject();
        }

        json.WriteEndArray();

        json.WriteStartArray("decisions");
        foreach (var d in view.Decisions)
        {
            var decision = d.Decision;
            json.WriteStartObject();
            json.WriteNumber("worldLine", decision.WorldLine);
            json.WriteString("reason", decision.Reason.ToString());
            json.WriteNumber("failed", decision.FailedObjectId);
            json.WriteStartArray("cut");
            foreach (var (id, version) in decision.Cut.OrderBy(static kv => kv.Key))
            {
                json.WriteStartObject();
                json.WriteNumber("id", id);
                json.WriteNumber("version", version);
                if (d.LostThrough(id) is { } lost)
                {
                    // Reported versions (version, lostThrough] were rolled back; 0 means nothing reported was lost.
                    json.WriteNumber("lostThrough", lost);
                }

                json.WriteEndObject();
            }

            json.WriteEndArray();
            json.WriteBoolean("lossKnown", d.ReportedBefore is not null);
            json.WriteEndObject();
        }

        json.WriteEndArray();
        json.WriteEndObject();
    }
}
