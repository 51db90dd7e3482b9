namespace Dse;

/// <summary>
/// Thrown when a well-formed DSE header fails the receiver's plausibility rules (docs/libdse.md, "Header rules"): it names
/// a participant the coordinator does not know, a version implausibly far ahead of the cluster, or a world-line the
/// coordinator has not decided. Nothing was started and nothing changed; services answer it as a malformed header.
/// </summary>
public sealed class DseHeaderRejectedException : DseHeaderFormatException
{
    /// <summary>Creates the exception with a message naming the rule the header broke.</summary>
    public DseHeaderRejectedException(string message)
        : base(message)
    {
    }
}
