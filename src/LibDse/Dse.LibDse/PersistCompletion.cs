namespace Dse;

/// <summary>
/// Handed to <see cref="StateObject"/>'s Persist: the implementation calls <see cref="SetDurable"/> once the version is
/// durable (possibly long after Persist returned, on any thread), or <see cref="SetFailed"/> if it cannot be made durable.
/// </summary>
public sealed class PersistCompletion
{
    private readonly StateObject _owner;
    private readonly VersionRecord _record;
    private int _done;

    internal PersistCompletion(StateObject owner, VersionRecord record)
    {
        _owner = owner;
        _record = record;
    }

    /// <summary>The version being persisted.</summary>
    public long Version => _record.Version;

    /// <summary>Signals that the version is durable. Later calls are ignored.</summary>
    public void SetDurable()
    {
        if (Interlocked.Exchange(ref _done, 1) == 0)
        {
            _owner.OnDurable(_record);
        }
    }

    /// <summary>Signals that the version could not be persisted: the StateObject faults and must be restarted.</summary>
    public void SetFailed(Exception error)
    {
        ArgumentNullException.ThrowIfNull(error);
        if (Interlocked.Exchange(ref _done, 1) == 0)
        {
            _owner.SetFault(new DseFaultedException($"Persist of version {_record.Version} failed; the StateObject must restart.", error));
        }
    }
}
