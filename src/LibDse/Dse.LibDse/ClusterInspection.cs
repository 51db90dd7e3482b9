namespace Dse;

/// <summary>
/// A read-only copy of a coordinator's view at one moment (<c>ClusterCoordinator.Inspect</c> in process, the
/// coordinator's Inspect RPC through <c>GrpcCoordinatorClient.InspectAsync</c>), for dashboards and tools: membership with liveness, the graph view and the retained decisions with what each cost.
/// Nothing in it is shared with the coordinator.
/// </summary>
/// <param name="Incarnation">The coordinator incarnation.</param>
/// <param name="Epoch">The epoch of the published state.</param>
/// <param name="WorldLine">The current world-line (0 before any decision).</param>
/// <param name="IsRecovering">Whether the coordinator waits for its participants' answers after its own restart.</param>
/// <param name="Fault">Why the coordinator stopped serving, or <c>null</c> while it serves.</param>
/// <param name="Participants">Every registered participant, removed ones included, by id.</param>
/// <param name="Decisions">The retained rollback decisions, oldest first.</param>
public sealed record ClusterInspection(
    long Incarnation,
    long Epoch,
    long WorldLine,
    bool IsRecovering,
    string? Fault,
    IReadOnlyList<ParticipantInspection> Participants,
    IReadOnlyList<DecisionInspection> Decisions);
