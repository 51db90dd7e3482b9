using Azure;
using Azure.Storage.Blobs;
using Azure.Storage.Blobs.Models;
using Azure.Storage.Blobs.Specialized;
using Microsoft.Extensions.Logging;

namespace Dse.Coordinator;

/// <summary>
/// A coordinator log in an Azure append blob: the records of docs/coordinator-log-format.md, one append block per
/// record, each append acknowledged by the service (durable) before it returns. The framing, recovery scan and append
/// bookkeeping are <see cref="FramedCoordinatorLog"/>'s; this class owns the blob and its lease.
/// </summary>
/// <remarks>
/// <para>Fencing is a blob lease. <see cref="FramedCoordinatorLog.OpenAsync"/> acquires an infinite lease under a lease id of its own; if
/// another incarnation (live or crashed) holds one, it breaks it with a zero break period and acquires again, and if
/// someone else acquired in between it lost the race and throws <see cref="CoordinatorLogFencedException"/>. Recovery
/// reads the blob under the new lease, so it sees every append the old holder made. Every append carries the lease id
/// and the expected append position as conditions: once a newer incarnation has taken the lease, an older one's append
/// fails with 412 and becomes <see cref="CoordinatorLogFencedException"/>, and no writer can ever append at a position
/// it did not recover. The newest opener wins; <see cref="FramedCoordinatorLog.DisposeAsync"/> releases the lease.</para>
/// <para>An append blob holds at most 50,000 blocks, so at most 50,000 records; opening warns when it gets close.</para>
/// </remarks>
public sealed class BlobCoordinatorLog : FramedCoordinatorLog
{
    /// <summary>Opening warns at this many committed blocks (records) of the 50,000 an append blob can hold.</summary>
    private const int BlockCountWarning = 40_000;

    private readonly BlobContainerClient _container;
    private readonly AppendBlobClient _blob;
    private readonly BlobLeaseClient _lease;

    // Guarded by the base's gate. Whether this instance holds the lease (as far as it knows: a newer incarnation may
    // have broken it), and whether it learnt that a newer incarnation took over.
    private bool _leaseHeld;
    private bool _fenced;

    /// <summary>Creates a log over the append blob <paramref name="blobName"/>; nothing is touched until <see cref="FramedCoordinatorLog.OpenAsync"/>.</summary>
    /// <param name="container">The container; <see cref="FramedCoordinatorLog.OpenAsync"/> creates it when missing.</param>
    /// <param name="blobName">The append blob; <see cref="FramedCoordinatorLog.OpenAsync"/> creates it when missing.</param>
    /// <param name="logger">Receives recovery, fencing and failure messages.</param>
    public BlobCoordinatorLog(BlobContainerClient container, string blobName, ILogger? logger = null)
        : base(Describe(container, blobName), logger)
    {
        _container = container;
        _blob = container.GetAppendBlobClient(blobName);
        _lease = _blob.GetBlobLeaseClient(Guid.NewGuid().ToString());
    }

    /// <summary>The lease id this instance acquires and passes with every append.</summary>
    public string LeaseId => _lease.LeaseId;

    /// <summary>Appends to an append blob are atomic: invalid bytes at its end are damage, never an interrupted append.</summary>
    private protected override bool TornTailPossible => false;

    /// <summary>Creates what is missing, takes the lease (breaking an older incarnation's) and downloads the blob under it.</summary>
    /// <exception cref="CoordinatorLogFencedException">Another incarnation took the lease while this one was opening.</exception>
    private protected override async Task<ReadOnlyMemory<byte>> FenceAndReadAsync(CancellationToken cancellationToken)
    {
        await CreateContainerIfMissingAsync(cancellationToken).ConfigureAwait(false);
        await CreateBlobIfMissingAsync(cancellationToken).ConfigureAwait(false);
        await AcquireLeaseAsync(cancellationToken).ConfigureAwait(false);
        try
        {
            return await DownloadAsync(cancellationToken).ConfigureAwait(false);
        }
        catch (Exception ex) when (ex is not CoordinatorLogFencedException)
        {
            // Do not leave a lease behind for a log this instance will never use.
            await ReleaseLeaseAsync().ConfigureAwait(false);
            throw;
        }
    }

    private protected override void TruncateTornTail(long validLength) =>
        throw new InvalidOperationException($"Coordinator log {Description} cannot have a torn tail: append blob appends are atomic.");

    /// <summary>One append block, conditioned on the lease and on the append position <paramref name="offset"/>.</summary>
    private protected override async Task AppendFrameAsync(byte[] frame, int frameLength, long offset)
    {
        var options = new AppendBlobAppendBlockOptions
        {
            Conditions = new AppendBlobRequestConditions { LeaseId = _lease.LeaseId, IfAppendPositionEqual = offset },
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
            if (!await IsOwnRecordAtPositionAsync(frame, frameLength, offset).ConfigureAwait(false))
            {
                throw Fence($"Coordinator log {Description} changed under this coordinator (expected to append at offset {offset}).", ex);
            }

            CoordinatorLogMessages.RetriedAppendConfirmed(Logger, Description, offset);
        }
        catch (RequestFailedException ex) when (ex.Status == 412)
        {
            throw Fence($"Coordinator log {Description} was taken over by a newer coordinator incarnation; this one may not append.", ex);
        }
    }

    private protected override void ThrowIfFenced()
    {
        if (_fenced)
        {
            throw new CoordinatorLogFencedException(
                $"Coordinator log {Description} was taken over by a newer coordinator incarnation; this one may not append.");
        }
    }

    /// <summary>Releases the lease unless fenced; never throws for a storage error.</summary>
    private protected override async ValueTask ReleaseAsync()
    {
        if (_leaseHeld && !_fenced)
        {
            await ReleaseLeaseAsync().ConfigureAwait(false);
        }
    }

    private static string Describe(BlobContainerClient container, string blobName)
    {
        ArgumentNullException.ThrowIfNull(container);
        ArgumentException.ThrowIfNullOrWhiteSpace(blobName);

        // Names only: the container's URI may carry a SAS token.
        return $"append blob '{container.AccountName}/{container.Name}/{blobName}'";
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
            CoordinatorLogMessages.LeaseBroken(Logger, Description);
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

    /// <summary>Downloads the whole blob under the lease, which the open just took.</summary>
    private async Task<ReadOnlyMemory<byte>> DownloadAsync(CancellationToken cancellationToken)
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

        if (download.Details.BlobCommittedBlockCount >= BlockCountWarning)
        {
            CoordinatorLogMessages.AppendBlobFilling(Logger, Description, download.Details.BlobCommittedBlockCount);
        }

        return download.Content.ToMemory();
    }

    /// <summary>Whether the blob ends with exactly <paramref name="frame"/> at <paramref name="offset"/>, the expected append position.</summary>
    private async Task<bool> IsOwnRecordAtPositionAsync(byte[] frame, int frameLength, long offset)
    {
        var conditions = new BlobRequestConditions { LeaseId = _lease.LeaseId };
        try
        {
            var properties = await _blob.GetPropertiesAsync(conditions).ConfigureAwait(false);
            if (properties.Value.ContentLength != offset + frameLength)
            {
                return false;
            }

            var options = new BlobDownloadOptions { Range = new HttpRange(offset, frameLength), Conditions = conditions };
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
        CoordinatorLogMessages.Fenced(Logger, Description, cause);
        return new CoordinatorLogFencedException(message, cause);
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
            CoordinatorLogMessages.LeaseReleaseFailed(Logger, Description, ex);
        }
    }
}
