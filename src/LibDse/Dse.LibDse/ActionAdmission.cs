namespace Dse;

/// <summary>
/// The checks a message passes before its action starts (docs/libdse.md): the recovery partition, the header rules and
/// commit ordering; on acceptance, the dependency edges the action adds to the receiver's current version.
/// </summary>
/// <remarks>
/// Called inside the receiver's action gate, so the world-line, version and dependency set it is given cannot change
/// meanwhile. It neither enters nor leaves the gate: on any outcome but <see cref="StartActionStatus.Accepted"/> the
/// caller leaves it, and nothing was added.
/// </remarks>
internal static class ActionAdmission
{
    /// <summary>
    /// Admits a message from <paramref name="senderWorldLine"/> carrying <paramref name="dependencies"/> into an action of
    /// <paramref name="receiver"/>, which is in <paramref name="worldLine"/> at <paramref name="version"/>, or says what
    /// stands in the way.
    /// </summary>
    public static StartActionStatus Admit(StateObject receiver, long worldLine, long version, DependencySet deps, long senderWorldLine, ReadOnlySpan<Dependency> dependencies)
    {
        if (senderWorldLine != worldLine)
        {
            // Recovery partition. A message from a lower world-line is discarded unless everything it carries provably
            // survived every decision since: then it is surviving state, merely sent before its sender caught up.
            if (senderWorldLine > worldLine || !receiver.ClusterView.Survived(dependencies, senderWorldLine, worldLine, receiver))
            {
                if (senderWorldLine < worldLine)
                {
                    DseTelemetry.MessagesDiscarded.Add(1);
                    return StartActionStatus.Discard;
                }

                return StartActionStatus.WorldLineBehind;
            }
        }

        // Header rules (docs/libdse.md): every participant named must be known, and a version ahead of ours within reach.
        long self = receiver.Id;
        var view = receiver.ClusterView;
        bool ahead = false;
        for (int i = 0; i < dependencies.Length; i++)
        {
            var d = dependencies[i];
            if (!HeaderRules.IsKnown(view, d.ObjectId, self))
            {
                return StartActionStatus.Implausible;
            }

            ahead |= d.Version > version;
        }

        if (ahead)
        {
            return HeaderRules.IsWithinLead(dependencies, view, receiver.Options.MaxVersionLead) ? StartActionStatus.VersionBehind : StartActionStatus.Implausible;
        }

        // A committed version needs no edge, but only the view of our own world-line can say so: a newer view's
        // committed map belongs to a lineage that may reuse version numbers of lost state.
        bool sameLineage = view.WorldLine == worldLine;
        for (int i = 0; i < dependencies.Length; i++)
        {
            var d = dependencies[i];
            if (d.ObjectId != self && !(sameLineage && d.Version <= view.CommittedVersion(d.ObjectId)))
            {
                deps.Add(d.ObjectId, d.Version);
            }
        }

        return StartActionStatus.Accepted;
    }
}
