namespace Dse;

/// <summary>
/// The waits for a <see cref="StateObject"/>'s own versions to become recoverable: a barrier on one version, and the
/// non-speculative end of an action or a detach, which first persists the version so that nothing leaves before it is
/// durable.
/// </summary>
/// <remarks>
/// Each wait takes the owner's next-change signal before it checks, so no change between the check and the wait is missed.
/// </remarks>
internal static class CommitWaits
{
    /// <summary>Waits until own version <paramref name="version"/>, produced in <paramref name="worldLine"/>, is committed.</summary>
    /// <exception cref="DseRolledBackException">The version was rolled back before it became recoverable.</exception>
    /// <exception cref="DseFaultedException">The owner faulted or was disposed while waiting.</exception>
    public static async ValueTask WaitAsync(StateObject owner, VersionBook book, long version, long worldLine, CancellationToken cancellationToken)
    {
        long started = DseTelemetry.StartBarrierWait();
        while (true)
        {
            var next = owner.NextChange;
            owner.ThrowIfFaulted();
            var view = owner.ClusterView;

            // Rollbacks first: a rolled-back number may be committed again by the new lineage.
            if (book.TryFindRollbackOf(version, worldLine, out long decided))
            {
                throw new DseRolledBackException(decided, new Dependency(owner.Id, version));
            }

            if (view.CommittedVersion(owner.Id) >= version)
            {
                DseTelemetry.EndBarrierWait(started, owner.Statistics);
                return;
            }

            await next.WaitAsync(cancellationToken).ConfigureAwait(false);
        }
    }

    /// <summary>Persists the version <paramref name="header"/> originates from, waits until it is committed, then returns the header.</summary>
    public static async ValueTask<DseHeader> PersistThenReturnAsync(StateObject owner, VersionBook book, DseHeader header, CancellationToken cancellationToken)
    {
        await PersistAndWaitAsync(owner, book, header.Origin.Version, header.WorldLine, cancellationToken).ConfigureAwait(false);
        return header;
    }

    /// <summary>Persists <paramref name="version"/>, which <paramref name="sthread"/> detached from, waits until it is committed, then returns the sthread.</summary>
    public static async ValueTask<Sthread> PersistThenReturnAsync(StateObject owner, VersionBook book, Sthread sthread, long version, long worldLine, CancellationToken cancellationToken)
    {
        await PersistAndWaitAsync(owner, book, version, worldLine, cancellationToken).ConfigureAwait(false);
        return sthread;
    }

    private static async ValueTask PersistAndWaitAsync(StateObject owner, VersionBook book, long version, long worldLine, CancellationToken cancellationToken)
    {
        await owner.AdvanceVersionToAsync(version + 1, cancellationToken).ConfigureAwait(false);
        await WaitAsync(owner, book, version, worldLine, cancellationToken).ConfigureAwait(false);
    }
}
