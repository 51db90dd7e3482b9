namespace Dse;

/// <summary>
/// The plausibility rules a receiver applies to a header before an action starts (docs/libdse.md, "Header rules"). A
/// header that breaks one would make the receiver depend on something that can never commit: a participant the
/// coordinator never registered, or a version no participant will reach. Parsing already refused what is malformed
/// (negative ids, versions or world-lines).
/// </summary>
internal static class HeaderRules
{
    /// <summary>Whether <paramref name="objectId"/> is the receiver or a participant the view knows (registered ever).</summary>
    public static bool IsKnown(ClusterState view, long objectId, long self) => objectId == self || view.Committed.ContainsKey(objectId);

    /// <summary>Whether a version ahead of the receiver is within <paramref name="maxLead"/> of the highest committed version.</summary>
    public static bool IsWithinLead(ReadOnlySpan<Dependency> dependencies, ClusterState view, long maxLead)
    {
        long bound = HighestCommitted(view) + maxLead;
        foreach (var d in dependencies)
        {
            if (d.Version > bound)
            {
                return false;
            }
        }

        return true;
    }

    /// <summary>Whether <paramref name="version"/> is within <paramref name="maxLead"/> of the highest committed version.</summary>
    public static bool IsWithinLead(long version, ClusterState view, long maxLead) => version <= HighestCommitted(view) + maxLead;

    /// <summary>The reason a header was refused, or null if it now passes: built only on the refusal path.</summary>
    public static string? Explain(long self, long senderWorldLine, ReadOnlySpan<Dependency> dependencies, ClusterState view, long maxLead)
    {
        if (senderWorldLine > view.WorldLine)
        {
            return $"StateObject {self} refused a header from world-line {senderWorldLine}: the coordinator has decided only up to world-line {view.WorldLine}.";
        }

        foreach (var d in dependencies)
        {
            if (!IsKnown(view, d.ObjectId, self))
            {
                return $"StateObject {self} refused a header naming participant {d.ObjectId}, which the coordinator does not know.";
            }
        }

        long bound = HighestCommitted(view) + maxLead;
        foreach (var d in dependencies)
        {
            if (d.Version > bound)
            {
                return $"StateObject {self} refused a header naming version {d.Version} of participant {d.ObjectId}: more than {maxLead} (DseOptions.MaxVersionLead) above the highest committed version in the cluster.";
            }
        }

        return null;
    }

    /// <summary>The refusal of a header that failed the rules after a refresh: logged once, counted, with its reason.</summary>
    public static DseHeaderRejectedException Refuse(StateObject receiver, DseHeader header, Microsoft.Extensions.Logging.ILogger logger)
    {
        var origin = header.Kind == DseHeaderKind.Origin ? header.GetDependency(0) : default;
        var dependencies = header.Kind == DseHeaderKind.Origin ? new ReadOnlySpan<Dependency>(in origin) : header.Dependencies;
        var reason = Explain(receiver.Id, header.WorldLine, dependencies, receiver.ClusterView, receiver.Options.MaxVersionLead)
            ?? $"StateObject {receiver.Id} refused a header that kept failing its rules while the view changed.";
        DseLogMessages.HeaderRejected(logger, reason);
        DseTelemetry.HeadersRejected.Add(1);
        return new DseHeaderRejectedException(reason);
    }

    private static long HighestCommitted(ClusterState view)
    {
        long highest = 0;
        foreach (var version in view.Committed.Values)
        {
            highest = Math.Max(highest, version);
        }

        return highest;
    }
}
