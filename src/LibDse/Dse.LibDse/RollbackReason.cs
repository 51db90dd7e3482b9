namespace Dse;

/// <summary>What caused a rollback decision.</summary>
public enum RollbackReason
{
    /// <summary>A registered participant connected again: it restarted and lost what its storage does not hold.</summary>
    Restart,

    /// <summary>The coordinator removed a participant (heartbeat timeout or an operator); its unreported state is lost.</summary>
    Removed,

    /// <summary>A whole-cluster cold start; no single participant failed.</summary>
    ColdStart,
}
