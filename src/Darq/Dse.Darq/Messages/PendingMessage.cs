namespace Dse.Darq;

/// <summary>
/// An unconsumed IN or SELF message: its kind, the start of the step that appended it (an IN message is a step of its
/// own) and its payload (none for a spilled IN message, read back from the log when the processor gets to it).
/// </summary>
internal readonly record struct PendingMessage(DarqMessageKind Kind, StepStart Step, ReadOnlyMemory<byte> Payload, int SpilledLength = -1)
{
    /// <summary>Whether the payload is in the log only (an IN message beyond <see cref="DarqOptions.MaxBufferedInBytes"/>); <see cref="SpilledLength"/> is its length then.</summary>
    public bool IsSpilled => SpilledLength >= 0;

    /// <summary>An unconsumed IN message appended at <paramref name="start"/> whose payload stays in the log only.</summary>
    public static PendingMessage SpilledIn(StepStart start, int length) => new(DarqMessageKind.In, start, ReadOnlyMemory<byte>.Empty, length);
}
