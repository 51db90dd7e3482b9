namespace Dse;

/// <summary>
/// A reported, uncommitted version in the <see cref="DependencyGraph"/>: its fragment and, while the incremental state
/// is valid, its place in it (<see cref="IncrementalClosure"/>).
/// </summary>
internal sealed class GraphNode(GraphParticipant owner, long version, long worldLine, Dependency[] dependencies)
{
    public GraphParticipant Owner { get; } = owner;

    public long Version { get; } = version;

    public long WorldLine { get; } = worldLine;

    public Dependency[] Dependencies { get; } = dependencies;

    // Incremental state, owned by IncrementalClosure; meaningless while it is invalid.

    // In the greatest closure: committable (awaiting AdvanceCommitted) or committed. Invariant: a node that is not
    // closed reaches a dangling dependency; a closed node's dependencies all resolve to closed nodes.
    public bool Closed;

    // Dependencies not resolved yet: on a version its owner has not reported, or on an unregistered participant.
    public int Dangling;

    // Neighbours in the owner's chain of uncommitted versions (the chain orders a participant's own versions).
    public GraphNode? Prev;
    public GraphNode? Next;

    // Resolved dependencies on versions that were not closed when resolved, and the reverse edges.
    public GraphNode[]? Out;
    public int OutCount;
    public GraphNode[]? In;
    public int InCount;

    // Generation stamps of the searches: visited, and found blocked.
    public int Mark;
    public int BlockedMark;
}
