using Microsoft.Extensions.Logging;

namespace Dse.Storage;

/// <summary>Source-generated log messages of the storage layer; event ids are stable (1000-1299; fencing 4260-4269).</summary>
internal static partial class StorageLogMessages
{
    [LoggerMessage(EventId = 1201, Level = LogLevel.Error,
        Message = "Write of {Length} bytes at offset {Offset} to page blob '{BlobName}' failed with error code {ErrorCode}.")]
    public static partial void AzureWriteFailed(ILogger logger, Exception exception, string blobName, ulong offset, uint length, uint errorCode);

    [LoggerMessage(EventId = 1202, Level = LogLevel.Error,
        Message = "Read of {Length} bytes at offset {Offset} from page blob '{BlobName}' failed with error code {ErrorCode}.")]
    public static partial void AzureReadFailed(ILogger logger, Exception exception, string blobName, ulong offset, uint length, uint errorCode);

    [LoggerMessage(EventId = 1203, Level = LogLevel.Warning,
        Message = "Removing page blob '{BlobName}' failed; the segment may still exist.")]
    public static partial void AzureRemoveFailed(ILogger logger, Exception exception, string blobName);

    [LoggerMessage(EventId = 1204, Level = LogLevel.Debug,
        Message = "Read from page blob '{BlobName}' found no blob (segment {SegmentId} was never written or was removed).")]
    public static partial void AzureSegmentNotFound(ILogger logger, string blobName, int segmentId);

    [LoggerMessage(EventId = 1205, Level = LogLevel.Error,
        Message = "A device completion callback threw; the exception was contained so that it does not crash an I/O thread.")]
    public static partial void CompletionCallbackThrew(ILogger logger, Exception exception);

    [LoggerMessage(EventId = 1101, Level = LogLevel.Information,
        Message = "Snapshot log on '{Device}' recovered {RecordCount} live records from {ScannedRecords} scanned; next append at address {TailAddress}.")]
    public static partial void SnapshotLogRecovered(ILogger logger, string device, int recordCount, ulong scannedRecords, long tailAddress);

    [LoggerMessage(EventId = 1102, Level = LogLevel.Warning,
        Message = "Snapshot log on '{Device}' dropped a torn record at its tail (address {Address}, sequence {Sequence}): {Reason}.")]
    public static partial void SnapshotLogTornTail(ILogger logger, string device, long address, ulong sequence, string reason);

    [LoggerMessage(EventId = 4260, Level = LogLevel.Information,
        Message = "Took exclusive ownership of {Storage}.")]
    public static partial void FenceAcquired(ILogger logger, string storage);

    [LoggerMessage(EventId = 4261, Level = LogLevel.Warning,
        Message = "Broke another instance's lease on page blob '{BlobName}' to take the storage over (a crashed instance, or one still running that is now fenced).")]
    public static partial void LeaseBroken(ILogger logger, string blobName);

    [LoggerMessage(EventId = 4262, Level = LogLevel.Error,
        Message = "Page blob device '{Device}' is fenced: another instance took its storage over ({Reason}); every later write fails.")]
    public static partial void DeviceFenced(ILogger logger, string device, string reason);

    [LoggerMessage(EventId = 4263, Level = LogLevel.Warning,
        Message = "Releasing the lease on page blob '{BlobName}' failed; the next owner breaks it.")]
    public static partial void LeaseReleaseFailed(ILogger logger, Exception exception, string blobName);

    [LoggerMessage(EventId = 4264, Level = LogLevel.Warning,
        Message = "File locking is disabled in this process (System.IO.DisableFileLocking); {Storage} cannot be fenced against another instance.")]
    public static partial void FileLockingDisabled(ILogger logger, string storage);
}
