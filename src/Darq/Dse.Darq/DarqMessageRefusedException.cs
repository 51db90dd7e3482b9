namespace Dse.Darq;

/// <summary>
/// General speculation: a DARQ refused a message (or an acknowledgement) because it comes from a world-line a rollback
/// left behind: the state that sent it no longer exists. The sender's delivery is not acknowledged.
/// </summary>
public sealed class DarqMessageRefusedException : InvalidOperationException
{
    /// <summary>Creates the exception.</summary>
    /// <param name="darqName">The refusing DARQ's name.</param>
    /// <param name="messageWorldLine">The world-line the message's header carries.</param>
    /// <param name="worldLine">The refusing DARQ's world-line.</param>
    public DarqMessageRefusedException(string darqName, long messageWorldLine, long worldLine)
        : base($"DARQ '{darqName}' refused a message from world-line {messageWorldLine}: it is in world-line {worldLine}, and the message's state was rolled back.")
    {
        MessageWorldLine = messageWorldLine;
        WorldLine = worldLine;
    }

    /// <summary>The world-line the refused message carried.</summary>
    public long MessageWorldLine { get; }

    /// <summary>The refusing DARQ's world-line.</summary>
    public long WorldLine { get; }
}
