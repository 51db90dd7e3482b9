namespace Dse;

/// <summary>What the coordinator did with a version report.</summary>
public enum ReportOutcome
{
    /// <summary>Added to the graph.</summary>
    Accepted,

    /// <summary>Already known; nothing changed.</summary>
    Duplicate,

    /// <summary>The version belongs to a lineage that a later rollback decision removed; nothing changed.</summary>
    Stale,
}
