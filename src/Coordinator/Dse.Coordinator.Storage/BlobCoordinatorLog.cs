using System.Buffers;
using Azure;
using Azure.Storage.Blobs;
using Azure.Storage.Blobs.Models;
using Azure.Storage.Blobs.Specialized;
using Microsoft.Extensions.Logging;
using Microsoft.Extensions.Logging.Abstractions;

namespace Dse.Coordinator;

/// <summary>
/// A coordinator log in an Azure append blob: the records of docs/coordinator-log-format.md, one append block per
/// record, each append acknowledged by the service (durable) before it returns.
/// </summary>
/// <remarks>
/// <para>Fencing is a blob lease. <see cref="OpenAsync"/> acquires an infinite lease under a lease id of its own; if
/// another incarnation (live or crashed) holds one, it breaks it with a zero break period and acquires again, and if
/// someone else acquired in between it lost the race and throws <see cref="CoordinatorLogFencedException"/>. Recovery
/// reads the blob under the new lease, so it sees every append the old holder made. Every append carries the lease id
/// and the expected append position as conditions: once a newer incarnation has taken the lease, an older one's append
/// fails with 412 and becomes <see cref="CoordinatorLogFencedException"/>, and no writer can ever append at a position
/// it did not recover. The newest opener wins; <see cref="DisposeAsync"/> releases the lease.</para>
/// <para>An append blob holds at most 50,000 blocks, so at most 50,000 records; opening warns when it gets close.</para>
/// </remarks>
public sealed class BlobCoordinatorLog : ICoordinatorLog
{
    /// <summary>Opening warns at this many committed blocks (records) of the 50,000 an append blob can hold.</summary>
    private const int BlockCountWarning = 40_000;

    private readonly BlobContainerClient _container;
    private readonly AppendBlobClient _blob;
    private readonly BlobLeaseClient _lease;
    private readonly ILogger _logger;

    /// <summary>Serializes open, appends and dispose; guards every field below.</summary>
    private readonly SemaphoreSlim _gate = new(1, 1);

    /// <summary>The blob's length: where the next record must go. Valid once opened.</summary>
    private long _appendPosition;

    /// <summary>Whether this instance holds the lease (as far as it knows: a newer incarnation may have broken it).</summary>
    private bool _leaseHeld;

    private bool _openCalled;
    private bool _fenced;
    private bool _disposed;

    /// <summary>The failure with an unknown outcome that faulted this instance; appends are refused once set.</summary>
    private Exception? _fault;

    private long _durableAppends;

    /// <summary>Creates a log over the append blob <paramref name="blobName"/>; nothing is touched until <see cref="OpenAsync"/>.</summary>
    /// <param name="container">The container; <see cref="OpenAsync"/> creates it when missing.</param>
    /// <param name="blobName">The append blob; <see cref="OpenAsync"/> creates it when missing.</param>
    /// <param name="logger">Receives recovery, fencing and failure messages.</param>
    public BlobCoordinatorLog(BlobContainerClient container, string blobName, ILogger? logger = null)
    {
        ArgumentNullException.ThrowIfNull(container);
        ArgumentException.ThrowIfNullOrWhiteSpace(blobName);
        _container = container;
        _blob = container.GetAppendBlobClient(blobName);
        _lease = _blob.GetBlobLeaseClient(Guid.NewGuid().ToString());
        _logger = logger ?? NullLogger.Instance;

        // Names only: the container's URI may carry a SAS token.
        Description = $"append blob '{container.AccountName}/{container.Name}/{blobName}'";
    }

    /// <inheritdoc />
    public string Description { get; }

    /// <inheritdoc />
    public long DurableAppends => Interlocked.Read(ref _durableAppends);

    /// <summary>The lease id this instance acquires and passes with every append.</summary>
    public string LeaseId => _lease.LeaseId;

    /// <inheritdoc />
    /// <exception cref="CoordinatorLogFencedException">Another incarnation took the lease while this one was opening.</exception>
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
            await CreateContainerIfMissingAsync(cancellationToken).ConfigureAwait(false);
            await CreateBlobIfMissingAsync(cancellationToken).ConfigureAwait(false);
            await AcquireLeaseAsync(cancellationToken).ConfigureAwait(false);
            try
            {
                return await RecoverAsync(cancellationToken).ConfigureAwait(false);
            }
            catch (Exception ex) when (ex is not CoordinatorLogFencedException)
            {
                // Do not leave a lease behind for a log this instance will never use.
                await ReleaseLeaseAsync().ConfigureAwait(false);
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
                await AppendFrameAsync(frame, frameLength).ConfigureAwait(false);
                _appendPosition += frameLength;
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

    /// <summary>Releases the lease (unless fenced) after any append in progress; never throws for a storage error.</summary>
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
            if (_leaseHeld && !_fenced)
            {
                await ReleaseLeaseAsync().ConfigureAwait(false);
            }
        }
        finally
        {
            _gate.Release();
        }
    }

    /// <summary>Whether the service refused an acquire because someone else holds (or is breaking) a lease.</summary>
    private static bool IsLeasedByOther(RequestFailedException exception)
        => exception.ErrorCode == BlobErrorCode.LeaseAlreadyPresent || exception.ErrorCode == BlobErrorCode.LeaseIsBreakingAndCannotBeAcquired;

    private async Task CreateContainerIfMissingAsync(CancellationToken cancellationToken)
    {
        try
        {
            await _container.CreateIfNotExistsAsync(cancellationToken: cancellationToken).ConfigureAwait(false);
        }
        catch (RequestFailedException ex) when (ex.Status == 403)
        {
            // Credentials scoped to the container (a container SAS) may not create containers; if it really is
            // missing, creating the blob fails next with ContainerNotFound, which says so.
        }
    }

    private async Task CreateBlobIfMissingAsync(CancellationToken cancellationToken)
    {
        try
        {
            await _blob.CreateIfNotExistsAsync(cancellationToken: cancellationToken).ConfigureAwait(false);
        }
        catch (RequestFailedException ex) when (ex.Status == 412)
        {
            // The blob exists and is leased: the create's lease check answered before its existence check.
        }
    }

    /// <summary>Acquires the lease, breaking another incarnation's once; losing the race after that is fencing.</summary>
    private async Task AcquireLeaseAsync(CancellationToken cancellationToken)
    {
        try
        {
            await _lease.AcquireAsync(BlobLeaseClient.InfiniteLeaseDuration, cancellationToken: cancellationToken).ConfigureAwait(false);
            _leaseHeld = true;
            return;
        }
        catch (RequestFailedException ex) when (IsLeasedByOther(ex))
        {
            // A live or crashed older incarnation holds it; take over below.
        }

        try
        {
            await _lease.BreakAsync(TimeSpan.Zero, cancellationToken: cancellationToken).ConfigureAwait(false);
            CoordinatorLogMessages.LeaseBroken(_logger, Description);
        }
        catch (RequestFailedException ex) when (ex.ErrorCode == BlobErrorCode.LeaseNotPresentWithLeaseOperation)
        {
            // Released between our acquire and break: nothing to break.
        }

        try
        {
            await _lease.AcquireAsync(BlobLeaseClient.InfiniteLeaseDuration, cancellationToken: cancellationToken).ConfigureAwait(false);
            _leaseHeld = true;
        }
        catch (RequestFailedException ex) when (IsLeasedByOther(ex))
        {
            // Breaking again could make two openers take turns breaking each other; the one that acquired first wins.
            throw Fence($"Coordinator log {Description} was taken by another coordinator incarnation while this one was opening.", ex);
        }
    }

    private async Task<IReadOnlyList<ReadOnlyMemory<byte>>> RecoverAsync(CancellationToken cancellationToken)
    {
        BlobDownloadResult download;
        try
        {
            // Under our lease: anything a fenced writer appended is in here, and nothing can be appended after it.
            var options = new BlobDownloadOptions { Conditions = new BlobRequestConditions { LeaseId = _lease.LeaseId } };
            download = (await _blob.DownloadContentAsync(options, cancellationToken).ConfigureAwait(false)).Value;
        }
        catch (RequestFailedException ex) when (ex.Status == 412)
        {
            throw Fence($"Coordinator log {Description} was taken by another coordinator incarnation while this one was recovering.", ex);
        }

        if (download.Details.BlobType != BlobType.Append)
        {
            throw new InvalidDataException($"Coordinator log {Description} is a {download.Details.BlobType} blob, not an append blob.");
        }

        var image = download.Content.ToMemory();
        var scan = CoordinatorLogFormat.Scan(image, Description, tolerateTornTail: false);
        _appendPosition = image.Length;
        if (download.Details.BlobCommittedBlockCount >= BlockCountWarning)
        {
            CoordinatorLogMessages.AppendBlobFilling(_logger, Description, download.Details.BlobCommittedBlockCount);
        }

        CoordinatorLogMessages.Opened(_logger, Description, scan.Records.Count, image.Length);
        return scan.Records;
    }

    /// <summary>One conditional append block; fencing errors become <see cref="CoordinatorLogFencedException"/>.</summary>
    private async Task AppendFrameAsync(byte[] frame, int frameLength)
    {
        var options = new AppendBlobAppendBlockOptions
        {
            Conditions = new AppendBlobRequestConditions { LeaseId = _lease.LeaseId, IfAppendPositionEqual = _appendPosition },
        };
        try
        {
            using var content = new MemoryStream(frame, 0, frameLength, writable: false);

            // Not cancellable: a cancelled request may still have been applied, which would leave the outcome unknown.
            await _blob.AppendBlockAsync(content, options, CancellationToken.None).ConfigureAwait(false);
        }
        catch (RequestFailedException ex) when (ex.ErrorCode == BlobErrorCode.AppendPositionConditionNotMet)
        {
            // Either the client retried a request the service had applied (our record is already there), or the
            // blob changed under us, which only another writer can do.
            if (!await IsOwnRecordAtPositionAsync(frame, frameLength).ConfigureAwait(false))
            {
                throw Fence($"Coordinator log {Description} changed under this coordinator (expected to append at offset {_appendPosition}).", ex);
            }

            CoordinatorLogMessages.RetriedAppendConfirmed(_logger, Description, _appendPosition);
        }
        catch (RequestFailedException ex) when (ex.Status == 412)
        {
            throw Fence($"Coordinator log {Description} was taken over by a newer coordinator incarnation; this one may not append.", ex);
        }
        catch (Exception ex) when (ex is not CoordinatorLogFencedException)
        {
            _fault = ex;
            CoordinatorLogMessages.AppendFaulted(_logger, Description, frameLength - CoordinatorLogFormat.HeaderSize, ex);
            throw;
        }
    }

    /// <summary>Whether the blob ends with exactly <paramref name="frame"/> at the expected append position.</summary>
    private async Task<bool> IsOwnRecordAtPositionAsync(byte[] frame, int frameLength)
    {
        var conditions = new BlobRequestConditions { LeaseId = _lease.LeaseId };
        try
        {
            var properties = await _blob.GetPropertiesAsync(conditions).ConfigureAwait(false);
            if (properties.Value.ContentLength != _appendPosition + frameLength)
            {
                return false;
            }

            var options = new BlobDownloadOptions { Range = new HttpRange(_appendPosition, frameLength), Conditions = conditions };
            var tail = await _blob.DownloadContentAsync(options).ConfigureAwait(false);
            return tail.Value.Content.ToMemory().Span.SequenceEqual(frame.AsSpan(0, frameLength));
        }
        catch (RequestFailedException ex) when (ex.Status == 412)
        {
            return false;
        }
    }

    /// <summary>Marks this instance fenced for good and builds the exception to throw.</summary>
    private CoordinatorLogFencedException Fence(string message, Exception cause)
    {
        _fenced = true;
        _leaseHeld = false;
        CoordinatorLogMessages.Fenced(_logger, Description, cause);
        return new CoordinatorLogFencedException(message, cause);
    }

    private void ThrowIfCannotAppend()
    {
        ObjectDisposedException.ThrowIf(_disposed, this);
        if (_fenced)
        {
            throw new CoordinatorLogFencedException(
                $"Coordinator log {Description} was taken over by a newer coordinator incarnation; this one may not append.");
        }

        if (_fault is not null)
        {
            throw new InvalidOperationException(
                $"Coordinator log {Description} is faulted by an earlier append with an unknown outcome; dispose it and open a new instance.", _fault);
        }

        if (!_leaseHeld)
        {
            throw new InvalidOperationException($"Coordinator log {Description} is not open; call OpenAsync first.");
        }
    }

    /// <summary>Best effort: a lease left behind is broken by the next incarnation anyway.</summary>
    private async Task ReleaseLeaseAsync()
    {
        _leaseHeld = false;
        try
        {
            using var timeout = new CancellationTokenSource(TimeSpan.FromSeconds(30));
            await _lease.ReleaseAsync(cancellationToken: timeout.Token).ConfigureAwait(false);
        }
        catch (Exception ex) when (ex is RequestFailedException or AggregateException or OperationCanceledException)
        {
            CoordinatorLogMessages.LeaseReleaseFailed(_logger, Description, ex);
        }
    }
}
