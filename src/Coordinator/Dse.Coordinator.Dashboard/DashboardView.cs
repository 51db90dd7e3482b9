using System.Text.Json;

namespace Dse.Coordinator.Dashboard;

/// <summary>Writes a <see cref="ClusterInspection"/> as the JSON the page reads (the snapshot and each event's data).</summary>
internal static class DashboardView
{
    /// <summary>
    /// Writes the view: the coordinator, its participants with their versions and latest heartbeat statistics, and its
    /// decisions with their losses.
    /// </summary>
    /// <param name="json">Where to write.</param>
    /// <param name="view">The coordinator's view.</param>
    /// <param name="operatorName">The authenticated operator, or <c>null</c> (read-only).</param>
    /// <param name="removalAvailable">Whether the coordinator has credentials, so that an operator could remove participants.</param>
    /// <param name="remote">Whether the coordinator runs in another process (the dashboard is read-only then).</param>
    /// <param name="now">The time of the view.</param>
    public static void Write(Utf8JsonWriter json, ClusterInspection view, string? operatorName, bool removalAvailable, bool remote, DateTimeOffset now)
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
        json.WriteBoolean("remote", remote);

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
            WriteStatistics(json, p.Statistics, p.StatisticsAge);
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

    /// <summary>
    /// What the participant's latest heartbeat said about itself, or <c>null</c>: its age, in-memory version and
    /// world-line, barrier-wait histogram (cumulative since it started) and registered queues.
    /// </summary>
    private static void WriteStatistics(Utf8JsonWriter json, ParticipantStatistics? statistics, TimeSpan? age)
    {
        if (statistics is null)
        {
            json.WriteNull("statistics");
            return;
        }

        json.WriteStartObject("statistics");
        json.WriteNumber("ageMs", (long)Math.Max(0, (age ?? TimeSpan.Zero).TotalMilliseconds));
        json.WriteNumber("currentVersion", statistics.CurrentVersion);
        json.WriteNumber("worldLine", statistics.WorldLine);

        var waits = statistics.BarrierWaits;
        json.WriteStartObject("barrierWaits");
        json.WriteNumber("total", waits.Total);
        json.WriteNumber("sumMs", waits.SumMilliseconds);
        WriteQuantile(json, "p50Ms", waits.QuantileUpperBound(0.5));
        WriteQuantile(json, "p99Ms", waits.QuantileUpperBound(0.99));
        json.WriteStartArray("upperBoundsMs");
        foreach (double bound in waits.UpperBoundsMilliseconds)
        {
            json.WriteNumberValue(bound);
        }

        json.WriteEndArray();
        json.WriteStartArray("counts");
        foreach (long count in waits.Counts)
        {
            json.WriteNumberValue(count);
        }

        json.WriteEndArray();
        json.WriteEndObject();

        json.WriteStartArray("queues");
        foreach (var queue in statistics.Queues)
        {
            json.WriteStartObject();
            json.WriteString("name", queue.Name);
            json.WriteNumber("unconsumed", queue.Unconsumed);
            json.WriteNumber("inSpilled", queue.InSpilled);
            json.WriteNumber("outPending", queue.OutPending);
            json.WriteEndObject();
        }

        json.WriteEndArray();
        json.WriteEndObject();
    }

    /// <summary>
    /// A quantile's bucket bound in milliseconds; <c>null</c> when nothing waited, or when it lies above the last bound
    /// (JSON has no infinity: with a non-zero <c>total</c>, null means "more than the last bound").
    /// </summary>
    private static void WriteQuantile(Utf8JsonWriter json, string name, double? bound)
    {
        if (bound is { } value && double.IsFinite(value))
        {
            json.WriteNumber(name, value);
        }
        else
        {
            json.WriteNull(name);
        }
    }
}
