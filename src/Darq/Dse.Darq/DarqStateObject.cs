namespace Dse.Darq;

/// <summary>
/// General speculation: a DARQ seen by LibDse. Persist is a DARQ commit whose cookie records the version; Restore voids
/// the log after a version with a ROLLBACK entry; Prune lets truncation move on. The DARQ owns it.
/// </summary>
internal sealed class DarqStateObject(DseOptions options, Darq darq) : StateObject(options)
{
    protected override void Persist(long version, ReadOnlyMemory<byte> metadata, PersistCompletion completion)
        => darq.PersistVersion(version, metadata, completion);

    protected override ValueTask<ReadOnlyMemory<byte>> RestoreAsync(long version, CancellationToken cancellationToken)
        => darq.RestoreVersionAsync(version, cancellationToken);

    protected override void Prune(long version) => darq.PruneVersions(version);

    protected override ValueTask<IReadOnlyList<PersistedVersion>> ListVersionsAsync(CancellationToken cancellationToken)
        => darq.ListPersistedVersionsAsync(cancellationToken);
}
