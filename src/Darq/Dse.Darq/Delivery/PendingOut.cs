namespace Dse.Darq;

/// <summary>
/// An OUT message awaiting acknowledgement: where its step starts (truncation keeps whole steps), destination, payload
/// (none for a spilled one, read back from the log when sent).
/// </summary>
internal readonly record struct PendingOut(StepStart Step, string Destination, ReadOnlyMemory<byte> Payload, int SpilledLength = -1)
{
    /// <summary>Whether the payload is in the log only (beyond <see cref="DarqOptions.MaxBufferedOutBytes"/>, or no destinations); <see cref="SpilledLength"/> is its length then.</summary>
    public bool IsSpilled => SpilledLength >= 0;

    /// <summary>The payload's length, in memory or not.</summary>
    public int Length => IsSpilled ? SpilledLength : Payload.Length;
}
