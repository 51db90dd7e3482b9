namespace Dse.Tests;

/// <summary>
/// What participants of the simulation hold: a stable address whose coordinator process the simulation can replace, the
/// way a gRPC client keeps its address while the coordinator behind it restarts.
/// </summary>
internal sealed class CoordinatorProxy(ClusterCoordinator? initial) : IDseCoordinator
{
    public ClusterCoordinator Current { get; set; } = initial!;

    public ValueTask<ConnectResponse> ConnectAsync(ConnectRequest request, CancellationToken cancellationToken = default) => Current.ConnectAsync(request, cancellationToken);

    public ValueTask<ReportOutcome> ReportPersistedAsync(long objectId, VersionReport report, CancellationToken cancellationToken = default) => Current.ReportPersistedAsync(objectId, report, cancellationToken);

    public ValueTask AcknowledgeRollbackAsync(long objectId, long worldLine, long keptThrough, CancellationToken cancellationToken = default) => Current.AcknowledgeRollbackAsync(objectId, worldLine, keptThrough, cancellationToken);

    public ValueTask<ClusterState> ResyncAsync(ResyncRequest request, CancellationToken cancellationToken = default) => Current.ResyncAsync(request, cancellationToken);

    public ValueTask HeartbeatAsync(long objectId, CancellationToken cancellationToken = default) => Current.HeartbeatAsync(objectId, cancellationToken);

    public ValueTask<ClusterState> GetStateAsync(CancellationToken cancellationToken = default) => Current.GetStateAsync(cancellationToken);

    public ValueTask<ClusterState> WaitForChangeAsync(long knownEpoch, CancellationToken cancellationToken = default) => Current.WaitForChangeAsync(knownEpoch, cancellationToken);
}

/// <summary>
/// A journal that survives coordinator restarts, and now and then crashes the coordinator in the middle of an append:
/// the entry then may or may not have become durable, as with a real log.
/// </summary>
internal sealed class SimJournal(Random rng) : IClusterJournal
{
    public List<ClusterJournalEntry> Entries { get; } = [];

    /// <summary>Whether appends may crash the coordinator; off once the simulation's failures stop.</summary>
    public bool Failing { get; set; } = true;

    public ValueTask AppendAsync(ClusterJournalEntry entry, CancellationToken cancellationToken = default)
    {
        if (Failing && entry is not CoordinatorStartedEntry && rng.Next(12) == 0)
        {
            if (rng.Next(2) == 0)
            {
                Entries.Add(entry);
            }

            return ValueTask.FromException(new IOException("simulated coordinator crash during a journal append"));
        }

        Entries.Add(entry);
        return ValueTask.CompletedTask;
    }
}
