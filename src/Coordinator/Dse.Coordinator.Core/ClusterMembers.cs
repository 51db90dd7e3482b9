namespace Dse;

/// <summary>
/// The participants registered with a <see cref="ClusterCoordinator"/> and when each was last heard from. Guarded by
/// the coordinator's lock.
/// </summary>
internal sealed class ClusterMembers
{
    private readonly Dictionary<long, ClusterMember> _members = [];

    /// <summary>Registered participants, removed ones included.</summary>
    public int Count => _members.Count;

    /// <summary>Every registered participant with its record, removed ones included.</summary>
    public IEnumerable<KeyValuePair<long, ClusterMember>> All => _members;

    /// <summary>The member record of <paramref name="objectId"/>, which must be registered.</summary>
    public ClusterMember this[long objectId] => _members[objectId];

    /// <summary>Whether <paramref name="objectId"/> is registered (removed or not).</summary>
    public bool Contains(long objectId) => _members.ContainsKey(objectId);

    /// <summary>Registers <paramref name="objectId"/> as heard from at <paramref name="now"/>, replacing any earlier record.</summary>
    public void Register(long objectId, long now) => _members[objectId] = new ClusterMember(now);

    /// <summary>Registers <paramref name="objectId"/> unless it is registered already.</summary>
    public void TryRegister(long objectId, long now) => _members.TryAdd(objectId, new ClusterMember(now));

    /// <summary>The member record of a registered participant, or the documented error.</summary>
    /// <exception cref="DseCoordinatorException">
    /// <see cref="CoordinatorErrorCode.UnknownParticipant"/>, or <see cref="CoordinatorErrorCode.Removed"/> unless
    /// <paramref name="allowRemoved"/>.
    /// </exception>
    public ClusterMember Known(long objectId, bool allowRemoved = false)
    {
        if (!_members.TryGetValue(objectId, out var member))
        {
            throw new DseCoordinatorException(CoordinatorErrorCode.UnknownParticipant, $"Participant {objectId} is not registered; connect before anything else.");
        }

        if (member.Removed && !allowRemoved)
        {
            throw new DseCoordinatorException(CoordinatorErrorCode.Removed, $"Participant {objectId} was removed from the cluster ({member.RemovedBecause}); restart it so that it connects again.");
        }

        return member;
    }

    /// <summary>
    /// Marks every participant heard from at <paramref name="now"/>: after a wait that held their requests (a journal
    /// write, the coordinator's recovery), no one counts as silent for it.
    /// </summary>
    public void TouchAll(long now)
    {
        foreach (var member in _members.Values)
        {
            member.LastSeen = now;
        }
    }

    /// <summary>The registered participants that are not removed.</summary>
    public HashSet<long> Active() => _members.Where(kv => !kv.Value.Removed).Select(kv => kv.Key).ToHashSet();

    /// <summary>The participants, not removed, not heard from within <paramref name="timeout"/>, in id order.</summary>
    public List<long> Silent(TimeProvider time, TimeSpan timeout) =>
        [.. _members.Where(kv => !kv.Value.Removed && time.GetElapsedTime(kv.Value.LastSeen) > timeout).Select(kv => kv.Key).Order()];
}
