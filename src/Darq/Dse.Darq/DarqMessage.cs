namespace Dse.Darq;

/// <summary>
/// A steppable message streamed to a processor: an IN message, or a SELF message during replay. A value: the stream holds
/// messages inline, with no object per message for the processor to chase.
/// </summary>
/// <param name="Lsn">The message's log sequence number (its FasterLog address); pass it to a step to consume the message.</param>
/// <param name="Kind">IN or SELF, or Activity (a SELF message marked as an activity, replayed with the SELF messages).</param>
/// <param name="Payload">The payload bytes.</param>
/// <param name="IsReplay">
/// Whether the message is replayed at registration (it was in the log before this processor registered) rather than live
/// traffic. Replay brings every unconsumed SELF message first, then every unconsumed IN message, each in LSN order.
/// </param>
public readonly record struct DarqMessage(long Lsn, DarqMessageKind Kind, ReadOnlyMemory<byte> Payload, bool IsReplay);
