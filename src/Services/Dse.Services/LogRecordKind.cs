namespace Dse.Services;

/// <summary>What a <see cref="SpeculativeLog"/> record is; byte 2 of its frame.</summary>
internal enum LogRecordKind : byte
{
    /// <summary>A user entry appended by <see cref="SpeculativeLog.Append"/>.</summary>
    Entry = 1,

    /// <summary>A commit record: the end of a persisted version.</summary>
    Commit = 2,

    /// <summary>A rollback marker: everything from its drop address up to the marker's end is rolled back.</summary>
    Rollback = 3,
}
