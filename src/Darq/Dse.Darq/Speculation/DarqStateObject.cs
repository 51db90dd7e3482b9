namespace Dse.Darq;

/// <summary>
/// General speculation: a DARQ seen by LibDse. Persist is a DARQ commit whose cookie records the version; Restore voids
/// the log after a version with a ROLLBACK entry; Prune lets truncation move on. The DARQ owns it.
/// </summary>
internal sealed class DarqStateObject(DseOptions options, DarqVersionStore store) : StateObject(options)
{
    protected override void Persist(long version, ReadOnlyMemory<byte> metadata, PersistCompletion completion) => store.Persist(version, metadata, completion);

    protected override ValueTask<ReadOnlyMemory<byte>> RestoreAsync(long version, CancellationToken cancellationToken) => store.RestoreAsync(version, cancellationToken);

    protected override void Prune(long version) => store.Prune(version);

    protected override ValueTask<IReadOnlyList<PersistedVersion>> ListVersionsAsync(CancellationToken cancellationToken) => store.ListAsync(cancellationToken);
}
