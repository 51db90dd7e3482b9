using Dse.Storage;
using System.Buffers;
using System.Diagnostics;
using Microsoft.Extensions.Logging;
using Microsoft.Extensions.Logging.Abstractions;

namespace Dse.Coordinator;

/// <summary>
/// A coordinator log in a local file: framed, checksummed records (docs/coordinator-log-format.md), each append
/// written and flushed to disk before it returns, a torn tail truncated on open.
/// </summary>
/// <remarks>
/// Fencing is an exclusive OS lock held from <see cref="OpenAsync"/> to <see cref="DisposeAsync"/>: the file is opened
/// with <see cref="FileShare.None"/>, which .NET enforces with <c>flock(LOCK_EX)</c> on Unix (per open file, so it
/// excludes other instances in the same process too) and with a share mode on Windows. A second instance, here or in
/// another process, cannot open the log while the first holds it: its <see cref="OpenAsync"/> throws
/// <see cref="CoordinatorLogFencedException"/>, and the holder never gets fenced. The OS drops the lock when the holder's
/// process dies, however it dies. The lock protects the file, not the path: never delete or replace the file while a
/// coordinator runs, and keep it on a local file system (network file systems may not honour <c>flock</c>).
/// </remarks>
public sealed class FileCoordinatorLog : ICoordinatorLog
{
    private readonly string _path;
    private readonly ILogger _logger;

    /// <summary>Serializes open, appends and dispose; guards every field below.</summary>
    private readonly SemaphoreSlim _gate = new(1, 1);

    /// <summary>The locked file; non-null exactly while the log is open and not disposed.</summary>
    private FileStream? _stream;

    /// <summary>End of the last durable record: the file's length while open.</summary>
    private long _tail;

    private bool _openCalled;
    private bool _disposed;

    /// <summary>The failure that left the file in an unknown state; appends are refused once set.</summary>
    private Exception? _fault;

    private long _durableAppends;

    /// <summary>Creates a log over <paramref name="path"/>; nothing is opened or created until <see cref="OpenAsync"/>.</summary>
    /// <param name="path">The log file; it and its directory are created by <see cref="OpenAsync"/> when missing.</param>
    /// <param name="logger">Receives recovery and failure messages.</param>
    public FileCoordinatorLog(string path, ILogger? logger = null)
    {
        ArgumentException.ThrowIfNullOrWhiteSpace(path);
        _path = Path.GetFullPath(path);
        _logger = logger ?? NullLogger.Instance;
        Description = $"file '{_path}'";
    }

    /// <inheritdoc />
    public string Description { get; }

    /// <inheritdoc />
    public long DurableAppends => Interlocked.Read(ref _durableAppends);

    /// <inheritdoc />
    /// <exception cref="CoordinatorLogFencedException">Another instance, in this process or another one, holds the file.</exception>
    /// <exception cref="InvalidOperationException">File locking is disabled for this process, so fencing cannot work.</exception>
    public async Task<IReadOnlyList<ReadOnlyMemory<byte>>> OpenAsync(CancellationToken cancellationToken = default)
    {
        await _gate.WaitAsync(cancellationToken).ConfigureAwait(false);
        try
        {
            ObjectDisposedException.ThrowIf(_disposed, this);
            if (_openCalled)
            {
                throw new InvalidOperationException($"Coordinator log {Description} was already opened; create a new instance to reopen it.");
            }

            _openCalled = true;
            if (StorageFence.FileLockingDisabled())
            {
                throw new InvalidOperationException(
                    $"Coordinator log {Description} cannot be fenced: file locking is disabled for this process " +
                    "(System.IO.DisableFileLocking or DOTNET_SYSTEM_IO_DISABLEFILELOCKING). Enable it, or use another coordinator log.");
            }

            var stream = OpenLocked();
            try
            {
                var result = await RecoverAsync(stream, cancellationToken).ConfigureAwait(false);
                _stream = stream;
                return result;
            }
            catch
            {
                await stream.DisposeAsync().ConfigureAwait(false);
                throw;
            }
        }
        finally
        {
            _gate.Release();
        }
    }

    /// <inheritdoc />
    public async Task AppendAsync(ReadOnlyMemory<byte> record, CancellationToken cancellationToken = default)
    {
        CoordinatorLogFormat.ValidateRecord(record, nameof(record));
        int frameLength = CoordinatorLogFormat.HeaderSize + record.Length;
        byte[] frame = ArrayPool<byte>.Shared.Rent(frameLength);
        try
        {
            CoordinatorLogFormat.WriteFrame(record.Span, frame.AsSpan(0, frameLength));
            await _gate.WaitAsync(cancellationToken).ConfigureAwait(false);
            try
            {
                var stream = WritableStream();
                Debug.Assert(stream.Length == _tail, "Only this instance writes the locked file, so its length is the tail.");
                try
                {
                    // Not cancellable once started: a half-written frame would need a reopen to clean up.
                    await RandomAccess.WriteAsync(stream.SafeFileHandle, frame.AsMemory(0, frameLength), _tail, CancellationToken.None)
                        .ConfigureAwait(false);
                    stream.Flush(flushToDisk: true);
                }
                catch (Exception ex)
                {
                    // After a failed write or fsync the file's content is unknown (and a retried fsync can lie), so
                    // only a reopen, which rescans and truncates a torn tail, may append again.
                    _fault = ex;
                    CoordinatorLogMessages.AppendFaulted(_logger, Description, record.Length, ex);
                    throw;
                }

                _tail += frameLength;
                Interlocked.Increment(ref _durableAppends);
            }
            finally
            {
                _gate.Release();
            }
        }
        finally
        {
            ArrayPool<byte>.Shared.Return(frame);
        }
    }

    /// <summary>Closes the file, which releases the lock; waits for an append in progress.</summary>
    public async ValueTask DisposeAsync()
    {
        await _gate.WaitAsync().ConfigureAwait(false);
        try
        {
            if (_disposed)
            {
                return;
            }

            _disposed = true;
            if (_stream is not null)
            {
                await _stream.DisposeAsync().ConfigureAwait(false);
                _stream = null;
            }
        }
        finally
        {
            _gate.Release();
        }
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

    private async Task<IReadOnlyList<ReadOnlyMemory<byte>>> RecoverAsync(FileStream stream, CancellationToken cancellationToken)
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

        var scan = CoordinatorLogFormat.Scan(image, Description, tolerateTornTail: true);
        if (scan.TornTail is { } torn)
        {
            stream.SetLength(torn.Offset);
            stream.Flush(flushToDisk: true);
            CoordinatorLogMessages.TornTailTruncated(_logger, Description, torn.Offset, torn.Length, torn.Problem);
        }

        _tail = scan.ValidLength;
        CoordinatorLogMessages.Opened(_logger, Description, scan.Records.Count, _tail);
        return scan.Records;
    }

    /// <summary>The open stream, or the exception that says why this instance cannot append.</summary>
    private FileStream WritableStream()
    {
        ObjectDisposedException.ThrowIf(_disposed, this);
        if (_fault is not null)
        {
            throw new InvalidOperationException(
                $"Coordinator log {Description} is faulted by an earlier append that failed; dispose it and open a new instance.", _fault);
        }

        return _stream ?? throw new InvalidOperationException($"Coordinator log {Description} is not open; call OpenAsync first.");
    }
}
