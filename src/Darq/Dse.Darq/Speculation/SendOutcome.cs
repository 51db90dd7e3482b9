namespace Dse.Darq;

/// <summary>What became of one attempt to send a run of OUT messages (<see cref="DarqSpeculation.SendAsync"/>).</summary>
internal readonly record struct SendOutcome(SendOutcomeKind Kind, DarqSentBatch Batch = default, ReadOnlyMemory<byte> ReplyHeader = default)
{
    /// <summary>Appended at the destination; acknowledged once <see cref="Batch"/> is durable, with <see cref="ReplyHeader"/>.</summary>
    public static SendOutcome Sent(DarqSentBatch batch, ReadOnlyMemory<byte> replyHeader = default) => new(SendOutcomeKind.Sent, batch, replyHeader);

    /// <summary>Nothing to send: the messages are no longer pending (acknowledged, discarded or voided meanwhile).</summary>
    public static SendOutcome Skipped => new(SendOutcomeKind.Skipped);

    /// <summary>Not sent yet: the step that wrote them is not recoverable and the destination takes only recoverable messages.</summary>
    public static SendOutcome Held => new(SendOutcomeKind.Held);

    /// <summary>Not sent: a restore made an earlier message to the destination pending again, which must leave first.</summary>
    public static SendOutcome Reordered => new(SendOutcomeKind.Reordered);
}
