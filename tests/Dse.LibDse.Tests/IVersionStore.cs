namespace Dse.Tests;

/// <summary>
/// Where a test StateObject's versions go. Persists wait until the test makes them durable, so durability and crashes
/// are under the test's control; a store outlives the StateObject instances that use it.
/// </summary>
internal interface IVersionStore
{
    /// <summary>Hands over a version to persist; durable only once completed.</summary>
    void Add(long version, byte[] metadata, long[] history, PersistCompletion completion);

    /// <summary>Makes the oldest pending persists durable, in order, and signals their completions.</summary>
    Task<int> CompleteOldestAsync(int count);

    /// <summary>The owner crashed: what is not durable is lost (a write in flight may be torn).</summary>
    Task CrashAsync(Random random);

    /// <summary>Reopens the storage for a new instance after a crash.</summary>
    Task ReopenAsync();

    /// <summary>Loads a version (null history for 0) and durably drops every later one, pending ones included.</summary>
    ValueTask<long[]?> RestoreAsync(long version);

    /// <summary>Drops versions up to and including <paramref name="version"/>.</summary>
    void PruneThrough(long version);

    /// <summary>The durable versions with their metadata.</summary>
    IReadOnlyList<PersistedVersion> List();
}
