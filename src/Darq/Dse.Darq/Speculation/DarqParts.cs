namespace Dse.Darq;

/// <summary>The collaborators of one DARQ, built together at open; the speculation strategy reaches them through this.</summary>
internal sealed class DarqParts
{
    public required DarqCore Core { get; init; }

    public required DarqProducerTable Producers { get; init; }

    public required DarqInbox Inbox { get; init; }

    public required DarqOutbox Outbox { get; init; }

    public required DarqTruncationMarks Marks { get; init; }

    public required DarqPacing Pacing { get; init; }

    public required DarqVersions Versions { get; init; }

    public required DarqCommitter Committer { get; init; }

    public required DarqInFeed Feed { get; init; }

    public required DarqIntake Intake { get; init; }

    public required DarqStepper Stepper { get; init; }

    public required DarqStepBatcher Batcher { get; init; }

    public required DarqCheckpointer Checkpointer { get; init; }

    public required DarqRecovery Recovery { get; init; }

    public required DarqAcknowledger Acknowledger { get; init; }
}
