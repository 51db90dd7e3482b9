using System.Buffers;
using Microsoft.Extensions.Logging;
using Microsoft.Extensions.Logging.Abstractions;

namespace Dse.Coordinator;

/// <summary>
/// The base of the coordinator logs that keep the framed records of docs/coordinator-log-format.md in one stored
/// image (<see cref="FileCoordinatorLog"/>, <see cref="BlobCoordinatorLog"/>): the life cycle (open once, append,
/// dispose), serialized appends with their framing, the recovery scan, the tail, the count of durable appends, and the
/// fault after an append with an unknown outcome. Each derived log owns its storage and its fencing.
/// </summary>
/// <remarks>
/// Every operation runs under one gate, so appends are serialized and never overlap open or dispose. Invariant while
/// open: the stored image is exactly the valid frames up to <c>tail</c>, and only this instance writes it.
/// </remarks>
public abstract class FramedCoordinatorLog : ICoordinatorLog
{
    /// <summary>Serializes open, appends and dispose; guards every field below.</summary>
    private readonly SemaphoreSlim _gate = new(1, 1);

    /// <summary>End of the last durable frame: where the next one goes. Valid once opened.</summary>
    private long _tail;

    private bool _openCalled;
    private bool _opened;
    private bool _disposed;

    /// <summary>The failure that left the stored image in an unknown state; appends are refused once set.</summary>
    private Exception? _fault;

    private long _durableAppends;

    /// <summary>Only the logs of this assembly derive from this class.</summary>
    private protected FramedCoordinatorLog(string description, ILogger? logger)
    {
        Description = description;
        Logger = logger ?? NullLogger.Instance;
    }

    /// <inheritdoc />
    public string Description { get; }

    /// <inheritdoc />
    public long DurableAppends => Interlocked.Read(ref _durableAppends);

    /// <summary>Receives recovery, fencing and failure messages.</summary>
    private protected ILogger Logger { get; }

    /// <summary>
    /// Whether the storage can end in an interrupted append (a file can; an append blob, whose appends are atomic,
    /// cannot), so that the recovery scan may truncate one torn frame at the end instead of refusing the log.
    /// </summary>
    private protected abstract bool TornTailPossible { get; }

    /// <inheritdoc />
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
            var image = await FenceAndReadAsync(cancellationToken).ConfigureAwait(false);
            try
            {
                var scan = CoordinatorLogFormat.Scan(image, Description, TornTailPossible);
                if (scan.TornTail is { } torn)
                {
                    TruncateTornTail(torn.Offset);
                    CoordinatorLogMessages.TornTailTruncated(Logger, Description, torn.Offset, torn.Length, torn.Problem);
                }

                _tail = scan.ValidLength;
                _opened = true;
                CoordinatorLogMessages.Opened(Logger, Description, scan.Records.Count, _tail);
                return scan.Records;
            }
            catch
            {
                // The image was refused: let go of the fence, as this instance will never use the log.
                await ReleaseAsync().ConfigureAwait(false);
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
                ThrowIfCannotAppend();
                try
                {
                    // Not cancellable once started: an append cut short leaves its outcome unknown.
                    await AppendFrameAsync(frame, frameLength, _tail).ConfigureAwait(false);
                }
                catch (Exception ex) when (ex is not CoordinatorLogFencedException)
                {
                    // The stored image is unknown now; only a reopen, which rescans it, may append again.
                    _fault = ex;
                    CoordinatorLogMessages.AppendFaulted(Logger, Description, record.Length, ex);
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

    /// <summary>Waits for an append in progress, then releases the storage (and with it the fence).</summary>
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
            await ReleaseAsync().ConfigureAwait(false);
        }
        finally
        {
            _gate.Release();
        }

        GC.SuppressFinalize(this);
    }

    /// <summary>
    /// Fences out older incarnations and reads the whole stored image under the fence. On failure it leaves nothing
    /// held (no lock, no lease) unless another incarnation fenced this one.
    /// </summary>
    private protected abstract Task<ReadOnlyMemory<byte>> FenceAndReadAsync(CancellationToken cancellationToken);

    /// <summary>Cuts the stored image to <paramref name="validLength"/> bytes durably (only when <see cref="TornTailPossible"/>).</summary>
    private protected abstract void TruncateTornTail(long validLength);

    /// <summary>
    /// Writes one whole frame at <paramref name="offset"/>, the tail, and returns once it is durable. Throws
    /// <see cref="CoordinatorLogFencedException"/> when a newer incarnation took over; anything else faults the log.
    /// </summary>
    private protected abstract Task AppendFrameAsync(byte[] frame, int frameLength, long offset);

    /// <summary>Throws <see cref="CoordinatorLogFencedException"/> if a newer incarnation fenced this one.</summary>
    private protected virtual void ThrowIfFenced()
    {
    }

    /// <summary>Releases the storage (on dispose, or when the image read was refused); never throws for a storage error that the next incarnation handles.</summary>
    private protected abstract ValueTask ReleaseAsync();

    private void ThrowIfCannotAppend()
    {
        ObjectDisposedException.ThrowIf(_disposed, this);
        ThrowIfFenced();
        if (_fault is not null)
        {
            throw new InvalidOperationException(
                $"Coordinator log {Description} is faulted by an earlier append with an unknown outcome; dispose it and open a new instance.", _fault);
        }

        if (!_opened)
        {
            throw new InvalidOperationException($"Coordinator log {Description} is not open; call OpenAsync first.");
        }
    }
}
