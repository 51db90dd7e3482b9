namespace Dse.Darq;

/// <summary>A spilled OUT message whose entry in the log is damaged: its destination is parked there (it can be discarded).</summary>
#pragma warning disable CA1032, CA1064 // Never leaves the DARQ: delivery parks the destination with its message.
internal sealed class DamagedOutEntryException(long lsn, string message) : IOException(message)
#pragma warning restore CA1032, CA1064
{
    /// <summary>The damaged message's LSN.</summary>
    public long Lsn { get; } = lsn;
}
