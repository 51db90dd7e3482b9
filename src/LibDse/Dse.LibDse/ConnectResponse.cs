namespace Dse;

/// <summary>The coordinator's answer to a connect: where to start.</summary>
/// <param name="WorldLine">The world-line the participant starts in.</param>
/// <param name="RestoreVersion">The version to restore (0: the initial, empty state).</param>
/// <param name="IsRestart">Whether the id was already registered, so the connect was treated as a failure.</param>
/// <param name="State">The cluster state at the time of the answer.</param>
public sealed record ConnectResponse(long WorldLine, long RestoreVersion, bool IsRestart, ClusterState State)
{
    /// <summary>
    /// True when the coordinator is recovering from its own restart: it recorded the listed versions as this
    /// participant's answer but cannot decide yet. Wait for the next state change (<see cref="ClusterState.Epoch"/> of
    /// <see cref="State"/>) and connect again; the other fields carry no restore point.
    /// </summary>
    public bool MustRetry { get; init; }

    /// <summary>A "connect again once the state changes" answer.</summary>
    public static ConnectResponse Retry(ClusterState state) => new(state.WorldLine, 0, true, state) { MustRetry = true };
}
