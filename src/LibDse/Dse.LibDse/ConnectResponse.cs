namespace Dse;

/// <summary>The coordinator's answer to a connect: where to start.</summary>
/// <param name="WorldLine">The world-line the participant starts in.</param>
/// <param name="RestoreVersion">The version to restore (0: the initial, empty state).</param>
/// <param name="IsRestart">Whether the id was already registered, so the connect was treated as a failure.</param>
/// <param name="State">The cluster state at the time of the answer.</param>
public sealed record ConnectResponse(long WorldLine, long RestoreVersion, bool IsRestart, ClusterState State);
