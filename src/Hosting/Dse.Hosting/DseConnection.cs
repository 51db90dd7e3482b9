namespace Dse.Hosting;

/// <summary>
/// How one StateObject's connect is going, for readiness and health, and whether it still commits
/// (<see cref="CommitWatch"/>). The connect fields are written by its connect loop only and read by health checks on
/// any thread (each is published with a volatile write).
/// </summary>
internal sealed class DseConnection(StateObject stateObject, TimeProvider time)
{
    private int _attempts;
    private Exception? _lastError;
    private Exception? _failure;

    public StateObject StateObject { get; } = stateObject;

    /// <summary>Times the StateObject's commits once connected, for health.</summary>
    public DseCommitWatch CommitWatch { get; } = new(stateObject, time);

    /// <summary>Connect attempts made so far.</summary>
    public int Attempts => Volatile.Read(ref _attempts);

    /// <summary>Why the last attempt failed, while the loop still retries; <c>null</c> once connected.</summary>
    public Exception? LastError => Volatile.Read(ref _lastError);

    /// <summary>Why the StateObject cannot connect at all (the loop gave up); <c>null</c> otherwise.</summary>
    public Exception? Failure => Volatile.Read(ref _failure);

    public int BeginAttempt() => Interlocked.Increment(ref _attempts);

    public void Retrying(Exception error) => Volatile.Write(ref _lastError, error);

    public void Connected() => Volatile.Write(ref _lastError, null);

    public void Failed(Exception error) => Volatile.Write(ref _failure, error);
}
