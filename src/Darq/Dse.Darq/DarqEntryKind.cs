namespace Dse.Darq;

/// <summary>The kinds of entry in a DARQ's log; docs/darq-format.md specifies each body.</summary>
internal enum DarqEntryKind : byte
{
    In = 1,
    Self = 2,
    Out = 3,
    Completion = 4,
    Register = 5,
    Ack = 6,

    /// <summary>Ends a checkpoint: the SELF messages it replaced (revision 3).</summary>
    Checkpoint = 7,

    /// <summary>General speculation: a restore voided the log from an address up to this entry.</summary>
    Rollback = 8,
}
