using System.Diagnostics;
using Dse.Storage;
using Microsoft.Extensions.Logging;

namespace Dse.Coordinator;

/// <summary>
/// A coordinator log in a local file: framed, checksummed records (docs/coordinator-log-format.md), each append
/// written and flushed to disk before it returns, a torn tail truncated on open. The framing, recovery scan and append
/// bookkeeping are <see cref="FramedCoordinatorLog"/>'s; this class owns the file and its lock.
/// </summary>
/// <remarks>
/// Fencing is an exclusive OS lock held from <see cref="FramedCoordinatorLog.OpenAsync"/> to <see cref="FramedCoordinatorLog.DisposeAsync"/>: the file is opened
/// with <see cref="FileShare.None"/>, which .NET enforces with <c>flock(LOCK_EX)</c> on Unix (per open file, so it
/// excludes other instances in the same process too) and with a share mode on Windows. A second instance, here or in
/// another process, cannot open the log while the first holds it: its <see cref="FramedCoordinatorLog.OpenAsync"/> throws
/// <see cref="CoordinatorLogFencedException"/>, and the holder never gets fenced. The OS drops the lock when the holder's
/// process dies, however it dies. The lock protects the file, not the path: never delete or replace the file while a
/// coordinator runs, and keep it on a local file system (network file systems may not honour <c>flock</c>). When file
/// locking is disabled for the process (<c>System.IO.DisableFileLocking</c>), fencing cannot work and
/// <see cref="FramedCoordinatorLog.OpenAsync"/> throws <see cref="InvalidOperationException"/>.
/// </remarks>
public sealed class FileCoordinatorLog : FramedCoordinatorLog
{
    private readonly string _path;

    /// <summary>The locked file; non-null from a successful fence until the log is abandoned or disposed. Guarded by the base's gate.</summary>
    private FileStream? _stream;

    /// <summary>Creates a log over <paramref name="path"/>; nothing is opened or created until <see cref="FramedCoordinatorLog.OpenAsync"/>.</summary>
    /// <param name="path">The log file; it and its directory are created by <see cref="FramedCoordinatorLog.OpenAsync"/> when missing.</param>
    /// <param name="logger">Receives recovery and failure messages.</param>
    public FileCoordinatorLog(string path, ILogger? logger = null)
        : base(DescribePath(path), logger)
    {
        _path = Path.GetFullPath(path);
    }

    /// <summary>A file can end in a frame whose write was interrupted.</summary>
    private protected override bool TornTailPossible => true;

    /// <summary>Takes the file lock (the fence) and reads the whole file.</summary>
    /// <exception cref="CoordinatorLogFencedException">Another instance, in this process or another one, holds the file.</exception>
    /// <exception cref="InvalidOperationException">File locking is disabled for this process, so fencing cannot work.</exception>
    private protected override async Task<ReadOnlyMemory<byte>> FenceAndReadAsync(CancellationToken cancellationToken)
    {
        if (StorageFence.FileLockingDisabled())
        {
            throw new InvalidOperationException(
                $"Coordinator log {Description} cannot be fenced: file locking is disabled for this process " +
                "(System.IO.DisableFileLocking or DOTNET_SYSTEM_IO_DISABLEFILELOCKING). Enable it, or use another coordinator log.");
        }

        var stream = OpenLocked();
        try
        {
            var image = await ReadAllAsync(stream, cancellationToken).ConfigureAwait(false);
            _stream = stream;
            return image;
        }
        catch
        {
            await stream.DisposeAsync().ConfigureAwait(false);
            throw;
        }
    }

    private protected override void TruncateTornTail(long validLength)
    {
        _stream!.SetLength(validLength);
        _stream.Flush(flushToDisk: true);
    }

    private protected override async Task AppendFrameAsync(byte[] frame, int frameLength, long offset)
    {
        var stream = _stream!;
        Debug.Assert(stream.Length == offset, "Only this instance writes the locked file, so its length is the tail.");

        // After a failed write or fsync the file's content is unknown (and a retried fsync can lie), so the base
        // faults the log and only a reopen, which rescans and truncates a torn tail, may append again.
        await RandomAccess.WriteAsync(stream.SafeFileHandle, frame.AsMemory(0, frameLength), offset, CancellationToken.None)
            .ConfigureAwait(false);
        stream.Flush(flushToDisk: true);
    }

    /// <summary>Closes the file, which releases the lock.</summary>
    private protected override async ValueTask ReleaseAsync()
    {
        if (_stream is not null)
        {
            await _stream.DisposeAsync().ConfigureAwait(false);
            _stream = null;
        }
    }

    private static string DescribePath(string path)
    {
        ArgumentException.ThrowIfNullOrWhiteSpace(path);
        return $"file '{Path.GetFullPath(path)}'";
    }

    private FileStream OpenLocked()
    {
        string? directory = Path.GetDirectoryName(_path);
        if (!string.IsNullOrEmpty(directory))
        {
            Directory.CreateDirectory(directory);
        }

        try
        {
            // FileShare.None is the fence: flock(LOCK_EX | LOCK_NB) on Unix, a share mode on Windows.
            // Buffering is off because every append is one write followed by an fsync.
            return new FileStream(_path, new FileStreamOptions
            {
                Mode = FileMode.OpenOrCreate,
                Access = FileAccess.ReadWrite,
                Share = FileShare.None,
                BufferSize = 0,
            });
        }
        catch (IOException ex) when (StorageFence.IsLockConflict(ex))
        {
            throw new CoordinatorLogFencedException(
                $"Coordinator log {Description} is held by another coordinator (another instance or process has it open and locked); " +
                "stop that coordinator, or wait for its process to exit, before opening the log.",
                ex);
        }
    }

    private async Task<ReadOnlyMemory<byte>> ReadAllAsync(FileStream stream, CancellationToken cancellationToken)
    {
        long length = stream.Length;
        if (length > Array.MaxLength)
        {
            throw new InvalidDataException($"Coordinator log {Description} is {length} bytes, more than recovery can hold in memory.");
        }

        byte[] image = new byte[length];
        int read = 0;
        while (read < image.Length)
        {
            int count = await RandomAccess.ReadAsync(stream.SafeFileHandle, image.AsMemory(read), read, cancellationToken).ConfigureAwait(false);
            if (count == 0)
            {
                throw new IOException($"Coordinator log {Description} ended at {read} bytes while reading the {length} it had when opened.");
            }

            read += count;
        }

        return image;
    }
}
