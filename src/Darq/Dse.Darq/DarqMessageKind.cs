namespace Dse.Darq;

/// <summary>The kinds of message a DARQ stores (the entry kinds a processor sees or produces).</summary>
public enum DarqMessageKind : byte
{
    /// <summary>A message from a producer, to be stepped by the processor.</summary>
    In = 1,

    /// <summary>A message from the processor to its future self (state or a delta of it), replayed after a restart until consumed.</summary>
    Self = 2,

    /// <summary>A message from the processor to another DARQ, delivered exactly once (see <see cref="DarqOptions.Destinations"/>).</summary>
    Out = 3,

    /// <summary>
    /// A SELF message marked as an activity: work on an external service, run by a <see cref="DarqActivityRunner"/> with
    /// the message's LSN as idempotency token and completed by a later step that consumes it. Replayed with the SELF
    /// messages; read it with <see cref="DarqActivity.FromMessage"/>.
    /// </summary>
    Activity = 4,
}
