namespace Dse.Storage;

/// <summary>The kind byte of a snapshot log record.</summary>
internal enum SnapshotRecordKind : byte
{
    /// <summary>A snapshot payload under a key.</summary>
    Data = 1,

    /// <summary>Marker: records before it whose key is greater than its key are dropped.</summary>
    DropAfter = 2,

    /// <summary>Marker: records before it whose key is less than its key are dropped.</summary>
    TruncateBefore = 3,
}
