namespace Dse;

/// <summary>Why a coordinator refused a request; carried across the wire so a remote client can tell the cases apart.</summary>
public enum CoordinatorErrorCode
{
    /// <summary>The request itself is malformed (versions not ascending, version 0, a garbled message).</summary>
    InvalidRequest,

    /// <summary>The participant id was never registered with this coordinator.</summary>
    UnknownParticipant,

    /// <summary>The request names a world-line the coordinator has not decided yet.</summary>
    FutureWorldLine,

    /// <summary>The participant was removed (heartbeat timeout or an operator); it must restart and connect again.</summary>
    Removed,

    /// <summary>
    /// The coordinator restarted since the participant last synchronized: it must send its durable fragments with
    /// <see cref="IDseCoordinator.ResyncAsync"/> before reporting.
    /// </summary>
    ResyncRequired,

    /// <summary>The coordinator cannot serve requests (its durable log failed); it must be restarted.</summary>
    Unavailable,

    /// <summary>The participant was not among the participants a cold start expects.</summary>
    NotExpected,

    /// <summary>
    /// The coordinator refused the caller's credential (no token, an unknown one, or one that does not speak for this
    /// participant): the same call fails the same way until the credential is fixed.
    /// </summary>
    CredentialRefused,
}
