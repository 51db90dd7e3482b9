namespace Dse;

/// <summary>
/// The waits the protocol requires before an action can start (docs/libdse.md): for a version advance or rollback in
/// progress, for commit ordering, for a pending rollback decision, and the one refresh the header rules allow before a
/// header is refused.
/// </summary>
internal static class ActionStartWaits
{
    /// <summary>Waits as <paramref name="status"/> requires and tries again, until the action starts, is discarded or refused.</summary>
    public static async ValueTask<bool> StartAsync(StateObject so, DseHeader header, StartActionStatus status, CancellationToken cancellationToken)
    {
        bool refreshed = false;
        while (true)
        {
            // Accepted means we are inside the gate: return before anything can throw, or the action leaks.
            switch (status)
            {
                case StartActionStatus.Accepted:
                    return true;
                case StartActionStatus.Discard:
                    return false;
                case StartActionStatus.Blocked:
                    await so.GateOpened.WaitAsync(cancellationToken).ConfigureAwait(false);
                    break;
                case StartActionStatus.VersionBehind:
                    await so.AdvanceVersionToAsync(header.MaxDependencyVersion(), cancellationToken).ConfigureAwait(false);
                    break;
                case StartActionStatus.WorldLineBehind:
                    await so.RefreshAsync(cancellationToken).ConfigureAwait(false);
                    var next = so.NextChange;
                    if (so.ClusterView.WorldLine < header.WorldLine)
                    {
                        // The coordinator's own state is older than the header: no participant can be on that world-line.
                        throw HeaderRules.Refuse(so, header, so.Logger);
                    }

                    if (so.WorldLine < header.WorldLine)
                    {
                        await next.WaitAsync(cancellationToken).ConfigureAwait(false);
                    }

                    break;
                case StartActionStatus.Implausible:
                    // A participant that connected a moment ago may be missing from a view that is a moment old: look once.
                    if (refreshed)
                    {
                        throw HeaderRules.Refuse(so, header, so.Logger);
                    }

                    await so.RefreshAsync(cancellationToken).ConfigureAwait(false);
                    refreshed = true;
                    break;
            }

            status = so.TryStartAction(header);
        }
    }

    /// <summary>Waits for the gate to open until a local action starts.</summary>
    public static async ValueTask StartLocalAsync(StateObject so, CancellationToken cancellationToken)
    {
        do
        {
            await so.GateOpened.WaitAsync(cancellationToken).ConfigureAwait(false);
        }
        while (!so.TryStartLocalAction());
    }
}
