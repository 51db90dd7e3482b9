using System.Collections.Concurrent;
using Azure;
using Azure.Storage.Blobs;
using Azure.Storage.Blobs.Models;
using Azure.Storage.Blobs.Specialized;
using FASTER.core;
using Microsoft.Extensions.Logging;
using Microsoft.Extensions.Logging.Abstractions;

namespace Dse.Storage;

/// <summary>
/// A FASTER device on Azure page blobs: one page blob per segment, named <c>{prefix}.{segmentId}</c>, created on the
/// first write to the segment with the segment size rounded up to 512 bytes. A new instance over the same container
/// and prefix sees everything that earlier instances wrote.
/// </summary>
/// <remarks>
/// Writes go through Put Page (split into 4 MiB requests), reads through a ranged download straight into the
/// destination buffer. Requests must be 512-byte aligned. Failures never throw on the caller's or an I/O thread: they
/// are logged and reported to the completion callback as a nonzero <see cref="DeviceErrorCodes"/> value
/// (<see cref="DeviceErrorCodes.NotFound"/> when the segment's blob does not exist).
/// <para>Exclusive ownership (<see cref="AcquireLeaseAsync"/>, usually through <see cref="StorageFence"/>): the device
/// takes an infinite lease on an owner blob <c>{prefix}.lease</c> and on every segment blob, breaking an earlier
/// owner's, and from then on conditions every write and delete on its lease id. An earlier owner still running is
/// fenced: its requests fail with 412, and it fails every later write with <see cref="DeviceErrorCodes.Fenced"/>. A
/// segment blob created after the takeover is leased on first use; when someone else's lease is on it, this device
/// breaks it only while it still holds the owner blob's lease, and checks that it still does after taking the segment's,
/// before its first write, so that of two instances only the newest owner ever writes.</para>
/// </remarks>
public sealed class AzurePageBlobDevice : StorageDeviceBase
{
    /// <summary>The page size of page blobs, which is also this device's sector size.</summary>
    public const int PageSize = 512;

    private const uint MaxPutPagesBytes = 4 * 1024 * 1024;

    /// <summary>How long releasing the leases at the end may take before it is left to the next owner's break.</summary>
    private static readonly TimeSpan ReleaseTimeout = TimeSpan.FromSeconds(30);

    private readonly long _unsegmentedBlobSize;
    private readonly bool _createContainer;
    private readonly ILogger _logger;

    /// <summary>Segments this instance has created (or found existing); a failed creation is removed so that the next write retries.</summary>
    private readonly ConcurrentDictionary<int, Task<PageBlobClient>> _segments = new();

    /// <summary>Cancelled on disposal so that requests in flight end promptly. Never disposed: late requests may still read its token.</summary>
    private readonly CancellationTokenSource _shutdown = new();

    /// <summary>Guards <see cref="_containerReady"/>.</summary>
    private readonly Lock _containerGate = new();
    private Task? _containerReady;
    private int _pendingOperations;
    private int _disposed;

    /// <summary>The lease id every write is conditioned on while the device owns its storage; <see langword="null"/> otherwise.</summary>
    private volatile string? _leaseId;

    /// <summary>Set once a request finds the lease gone; never reset: every later write fails.</summary>
    private int _fenced;

    /// <summary>Creates a device over a container and blob name prefix.</summary>
    /// <param name="container">The container holding the segment blobs.</param>
    /// <param name="blobNamePrefix">Prefix of the blob names; segment <c>n</c> lives in blob <c>{prefix}.{n}</c>.</param>
    /// <param name="options">Device options; <see langword="null"/> for the defaults.</param>
    /// <param name="logger">Receives failures; <see langword="null"/> for none.</param>
    public AzurePageBlobDevice(BlobContainerClient container, string blobNamePrefix, AzurePageBlobDeviceOptions? options = null, ILogger? logger = null)
        : base($"{NotNull(container).Name}/{blobNamePrefix}", PageSize, Validated(options).Capacity)
    {
        options ??= new AzurePageBlobDeviceOptions();
        ArgumentException.ThrowIfNullOrWhiteSpace(blobNamePrefix);
        Container = container;
        BlobNamePrefix = blobNamePrefix;
        _unsegmentedBlobSize = options.UnsegmentedBlobSize;
        _createContainer = options.CreateContainerIfNotExists;
        _logger = logger ?? NullLogger.Instance;
    }

    /// <summary>The container holding the segment blobs.</summary>
    public BlobContainerClient Container { get; }

    /// <summary>The prefix of the segment blob names.</summary>
    public string BlobNamePrefix { get; }

    /// <summary>The name of the owner blob whose lease stands for the ownership of all the device's blobs.</summary>
    public string OwnerBlobName => BlobNamePrefix + ".lease";

    /// <summary>The lease id of this device's ownership (<see cref="AcquireLeaseAsync"/>), or <see langword="null"/> when it holds none.</summary>
    public string? LeaseId => _leaseId;

    /// <summary>Whether another instance took the storage over since <see cref="AcquireLeaseAsync"/>: every write now fails.</summary>
    public bool IsFenced => Volatile.Read(ref _fenced) != 0;

    /// <summary>The number of writes and reads in flight.</summary>
    public int PendingOperations => Volatile.Read(ref _pendingOperations);

    /// <summary>The size of each segment's page blob: the segment size rounded up to 512, or the unsegmented size.</summary>
    public long BlobSize => segmentSize > 0 ? (segmentSize + PageSize - 1) / PageSize * PageSize : _unsegmentedBlobSize;

    /// <summary>Returns the name of the blob that holds a segment.</summary>
    /// <param name="segmentId">The segment id.</param>
    public string GetBlobName(int segmentId) => GetSegmentFilename(BlobNamePrefix, segmentId);

    /// <summary>
    /// Takes exclusive ownership of the device's blobs: breaks whatever lease is on the owner blob and on each existing
    /// segment blob, and takes an infinite lease of its own on each; later writes, segment creations and deletes are
    /// conditioned on it. Call before reading what another instance may still be writing (before recovery).
    /// </summary>
    /// <param name="cancellationToken">Cancels taking the leases (the device then holds none).</param>
    /// <exception cref="InvalidOperationException">The device already holds its lease.</exception>
    /// <exception cref="StorageFencedException">Another instance took a blob's lease between this one's break and acquire.</exception>
    public async Task AcquireLeaseAsync(CancellationToken cancellationToken = default)
    {
        ObjectDisposedException.ThrowIf(Volatile.Read(ref _disposed) != 0, this);
        if (_leaseId is not null)
        {
            throw new InvalidOperationException($"Page blob device '{FileName}' already holds its lease.");
        }

        string leaseId = Guid.NewGuid().ToString();
        await EnsureContainerAsync().WaitAsync(cancellationToken).ConfigureAwait(false);
        var owner = Container.GetPageBlobClient(OwnerBlobName);
        try
        {
            await owner.CreateIfNotExistsAsync(PageSize, cancellationToken: cancellationToken).ConfigureAwait(false);
        }
        catch (RequestFailedException ex) when (ex.Status == 412)
        {
            // It exists and is leased: the create's lease check answered before its existence check.
        }

        // The owner first: an earlier owner creating a segment from now on finds out it lost (see the remarks).
        await TakeLeaseAsync(owner, leaseId, cancellationToken).ConfigureAwait(false);
        try
        {
            var existing = new List<int>();
            await foreach (var item in Container.GetBlobsAsync(new GetBlobsOptions { Prefix = BlobNamePrefix + "." }, cancellationToken).ConfigureAwait(false))
            {
                if (TryParseSegment(item.Name, out int segmentId))
                {
                    existing.Add(segmentId);
                }
            }

            foreach (int segmentId in existing)
            {
                var blob = Container.GetPageBlobClient(GetBlobName(segmentId));
                await TakeLeaseAsync(blob, leaseId, cancellationToken).ConfigureAwait(false);
                _segments[segmentId] = Task.FromResult(blob);
            }
        }
        catch
        {
            await ReleaseAsync(owner, leaseId).ConfigureAwait(false);
            throw;
        }

        _leaseId = leaseId;
    }

    /// <summary>
    /// Releases the owner blob's and the segment blobs' leases (best effort: a failure is logged, and the next owner breaks
    /// a lease left behind); writes are unconditioned again afterwards. Safe to call after <see cref="Dispose"/>.
    /// </summary>
    public async Task ReleaseLeaseAsync()
    {
        string? leaseId = _leaseId;
        if (leaseId is null)
        {
            return;
        }

        _leaseId = null;
        if (IsFenced)
        {
            // Someone else's now; there is nothing of ours to release.
            return;
        }

        foreach (var segment in _segments.Values)
        {
            if (segment.IsCompletedSuccessfully)
            {
                await ReleaseAsync(segment.Result, leaseId).ConfigureAwait(false);
            }
        }

        await ReleaseAsync(Container.GetPageBlobClient(OwnerBlobName), leaseId).ConfigureAwait(false);
    }

    /// <inheritdoc />
    public override void WriteAsync(IntPtr sourceAddress, int segmentId, ulong destinationAddress, uint numBytesToWrite,
        DeviceIOCompletionCallback callback, object? context)
    {
        uint error = Validate(segmentId, destinationAddress, numBytesToWrite);
        if (error != DeviceErrorCodes.Success)
        {
            DeviceCompletion.Invoke(callback, error, 0, context, _logger);
            return;
        }

        HandleCapacity(segmentId);
        Interlocked.Increment(ref _pendingOperations);
        _ = WriteCoreAsync(sourceAddress, segmentId, destinationAddress, numBytesToWrite, callback, context);
    }

    /// <inheritdoc />
    public override void ReadAsync(int segmentId, ulong sourceAddress, IntPtr destinationAddress, uint readLength,
        DeviceIOCompletionCallback callback, object? context)
    {
        uint error = Validate(segmentId, sourceAddress, readLength);
        if (error != DeviceErrorCodes.Success)
        {
            DeviceCompletion.Invoke(callback, error, 0, context, _logger);
            return;
        }

        Interlocked.Increment(ref _pendingOperations);
        _ = ReadCoreAsync(segmentId, sourceAddress, destinationAddress, readLength, callback, context);
    }

    /// <inheritdoc />
    public override void RemoveSegmentAsync(int segment, AsyncCallback callback, IAsyncResult? result)
    {
        _segments.TryRemove(segment, out _);
        _ = RemoveCoreAsync(segment, callback, result);
    }

    /// <summary>Deletes the segment's blob with the SDK's synchronous call; a failure is logged, not thrown.</summary>
    /// <param name="segment">The segment id.</param>
    public override void RemoveSegment(int segment)
    {
        _segments.TryRemove(segment, out _);
        if (Volatile.Read(ref _disposed) != 0)
        {
            return;
        }

        string blobName = GetBlobName(segment);
        try
        {
            Container.GetPageBlobClient(blobName).DeleteIfExists(DeleteSnapshotsOption.None, LeaseConditions(), _shutdown.Token);
        }
        catch (Exception ex) when (ex is RequestFailedException or OperationCanceledException)
        {
            NoteFencing(ex);
            StorageLogMessages.AzureRemoveFailed(_logger, ex, blobName);
        }
    }

    /// <summary>Cancels requests in flight (they complete with an error code) and fails later ones. Blobs are kept.</summary>
    public override void Dispose()
    {
        if (Interlocked.Exchange(ref _disposed, 1) == 0)
        {
            _shutdown.Cancel();
        }
    }

    private static AzurePageBlobDeviceOptions Validated(AzurePageBlobDeviceOptions? options)
    {
        options ??= new AzurePageBlobDeviceOptions();
        options.Validate();
        return options;
    }

    private static BlobContainerClient NotNull(BlobContainerClient container)
    {
        ArgumentNullException.ThrowIfNull(container);
        return container;
    }

    private static unsafe UnmanagedMemoryStream OpenSource(IntPtr address, uint length)
        => new((byte*)address, length, length, FileAccess.Read);

    private static unsafe UnmanagedMemoryStream OpenDestination(IntPtr address, uint length)
        => new((byte*)address, 0, length, FileAccess.Write);

    private static bool IsLeasedByOther(RequestFailedException exception)
        => exception.ErrorCode == BlobErrorCode.LeaseAlreadyPresent || exception.ErrorCode == BlobErrorCode.LeaseIsBreakingAndCannotBeAcquired;

    /// <summary>Breaks whatever lease is on the blob and takes one with <paramref name="leaseId"/>.</summary>
    private async Task TakeLeaseAsync(PageBlobClient blob, string leaseId, CancellationToken cancellationToken)
    {
        var lease = blob.GetBlobLeaseClient(leaseId);
        try
        {
            await lease.AcquireAsync(BlobLeaseClient.InfiniteLeaseDuration, cancellationToken: cancellationToken).ConfigureAwait(false);
            return;
        }
        catch (RequestFailedException ex) when (IsLeasedByOther(ex))
        {
            // An earlier owner's (crashed, or still running and about to be fenced): take over below.
        }

        try
        {
            await lease.BreakAsync(TimeSpan.Zero, cancellationToken: cancellationToken).ConfigureAwait(false);
            StorageLogMessages.LeaseBroken(_logger, blob.Name);
        }
        catch (RequestFailedException ex) when (ex.ErrorCode == BlobErrorCode.LeaseNotPresentWithLeaseOperation)
        {
            // Released between our acquire and break: nothing to break.
        }

        try
        {
            await lease.AcquireAsync(BlobLeaseClient.InfiniteLeaseDuration, cancellationToken: cancellationToken).ConfigureAwait(false);
        }
        catch (RequestFailedException ex) when (IsLeasedByOther(ex))
        {
            // Breaking again could make two openers take turns breaking each other: the one that acquired first wins.
            throw new StorageFencedException(
                $"Page blob '{blob.Name}' was taken by another instance while this one was taking it over; that instance owns the storage.", ex);
        }
    }

    /// <summary>Throws <see cref="StorageFencedException"/> (and fences the device) unless it still holds the owner blob's lease.</summary>
    private async Task VerifyOwnershipAsync(string leaseId)
    {
        try
        {
            await Container.GetPageBlobClient(OwnerBlobName).GetBlobLeaseClient(leaseId).RenewAsync(cancellationToken: _shutdown.Token).ConfigureAwait(false);
        }
        catch (RequestFailedException ex) when (ex.Status is 409 or 412)
        {
            MarkFenced($"the lease on '{OwnerBlobName}' is gone: {ex.ErrorCode}");
            throw new StorageFencedException($"Page blob device '{FileName}' no longer owns its storage: another instance took the lease on '{OwnerBlobName}'.", ex);
        }
    }

    /// <summary>Leases a segment blob on first use: breaks a lease found on it only while this device still owns the storage.</summary>
    private async Task LeaseSegmentAsync(PageBlobClient blob, string leaseId)
    {
        var lease = blob.GetBlobLeaseClient(leaseId);
        try
        {
            await lease.AcquireAsync(BlobLeaseClient.InfiniteLeaseDuration, cancellationToken: _shutdown.Token).ConfigureAwait(false);
        }
        catch (RequestFailedException ex) when (IsLeasedByOther(ex))
        {
            // Created and leased by an earlier owner after our takeover (beyond our tail), or by a later owner, which
            // means we lost: only the owner breaks it.
            await VerifyOwnershipAsync(leaseId).ConfigureAwait(false);
            await TakeLeaseAsync(blob, leaseId, _shutdown.Token).ConfigureAwait(false);
        }

        // Still the owner after taking it: whoever took the owner blob from us did so before we took this segment, so it
        // will break our lease on it before it writes there, and we write nothing here.
        await VerifyOwnershipAsync(leaseId).ConfigureAwait(false);
    }

    private async Task ReleaseAsync(PageBlobClient blob, string leaseId)
    {
        try
        {
            using var timeout = new CancellationTokenSource(ReleaseTimeout);
            await blob.GetBlobLeaseClient(leaseId).ReleaseAsync(cancellationToken: timeout.Token).ConfigureAwait(false);
        }
        catch (Exception ex) when (ex is RequestFailedException or OperationCanceledException)
        {
            StorageLogMessages.LeaseReleaseFailed(_logger, ex, blob.Name);
        }
    }

    private BlobRequestConditions? LeaseConditions() => _leaseId is { } leaseId ? new BlobRequestConditions { LeaseId = leaseId } : null;

    private bool TryParseSegment(string blobName, out int segmentId)
    {
        segmentId = -1;
        return blobName.Length > BlobNamePrefix.Length + 1
            && blobName.StartsWith(BlobNamePrefix + ".", StringComparison.Ordinal)
            && int.TryParse(blobName.AsSpan(BlobNamePrefix.Length + 1), System.Globalization.NumberStyles.None, System.Globalization.CultureInfo.InvariantCulture, out segmentId);
    }

    /// <summary>Fences the device when a request failed because its lease is gone (412 on a conditioned request).</summary>
    private void NoteFencing(Exception exception)
    {
        if (exception is RequestFailedException { Status: 412 } failed && _leaseId is not null)
        {
            MarkFenced($"a request conditioned on its lease failed: {failed.ErrorCode}");
        }
    }

    private void MarkFenced(string reason)
    {
        if (Interlocked.Exchange(ref _fenced, 1) == 0)
        {
            StorageLogMessages.DeviceFenced(_logger, FileName, reason);
        }
    }

    private uint Validate(int segmentId, ulong offset, uint length)
    {
        if (Volatile.Read(ref _disposed) != 0)
        {
            return DeviceErrorCodes.Disposed;
        }

        if (IsFenced)
        {
            return DeviceErrorCodes.Fenced;
        }

        bool misaligned = offset % PageSize != 0 || length % PageSize != 0;
        bool outsideBlob = offset + length > (ulong)BlobSize;
        return segmentId < 0 || misaligned || outsideBlob ? DeviceErrorCodes.InvalidArgument : DeviceErrorCodes.Success;
    }

    private PageBlobUploadPagesOptions? UploadOptions()
        => _leaseId is { } leaseId ? new PageBlobUploadPagesOptions { Conditions = new PageBlobRequestConditions { LeaseId = leaseId } } : null;

    private uint ErrorCodeOf(Exception exception) => exception switch
    {
        StorageFencedException => DeviceErrorCodes.Fenced,
        RequestFailedException { Status: 412 } when _leaseId is not null => DeviceErrorCodes.Fenced,
        RequestFailedException { Status: 404 } => DeviceErrorCodes.NotFound,
        RequestFailedException { Status: 416 } => DeviceErrorCodes.InvalidArgument,
        OperationCanceledException when _shutdown.IsCancellationRequested => DeviceErrorCodes.Disposed,
        _ => DeviceErrorCodes.IoError,
    };

    private async Task WriteCoreAsync(IntPtr source, int segmentId, ulong offset, uint length,
        DeviceIOCompletionCallback callback, object? context)
    {
        uint error = DeviceErrorCodes.Success;
        var segment = _segments.GetOrAdd(segmentId, static (id, self) => self.CreateSegmentAsync(id), this);
        try
        {
            var blob = await segment.ConfigureAwait(false);
            for (uint done = 0; done < length;)
            {
                uint chunk = Math.Min(length - done, MaxPutPagesBytes);
                using var content = OpenSource(source + (nint)done, chunk);
                await blob.UploadPagesAsync(content, (long)(offset + done), UploadOptions(), _shutdown.Token).ConfigureAwait(false);
                done += chunk;
            }
        }
        catch (Exception ex)
        {
            NoteFencing(ex);
            error = ErrorCodeOf(ex);

            // Creation failed, or the blob vanished under us: forget it so that the next write creates it again.
            if (segment.IsFaulted || error == DeviceErrorCodes.NotFound)
            {
                _segments.TryRemove(KeyValuePair.Create(segmentId, segment));
            }

            StorageLogMessages.AzureWriteFailed(_logger, ex, GetBlobName(segmentId), offset, length, error);
        }
        finally
        {
            Interlocked.Decrement(ref _pendingOperations);
        }

        DeviceCompletion.Invoke(callback, error, error == DeviceErrorCodes.Success ? length : 0, context, _logger);
    }

    private async Task ReadCoreAsync(int segmentId, ulong offset, IntPtr destination, uint length,
        DeviceIOCompletionCallback callback, object? context)
    {
        uint error = DeviceErrorCodes.Success;
        uint bytesRead = 0;
        string blobName = GetBlobName(segmentId);
        try
        {
            var blob = Container.GetPageBlobClient(blobName);
            var download = new BlobDownloadOptions { Range = new HttpRange((long)offset, length) };
            using var response = (await blob.DownloadStreamingAsync(download, _shutdown.Token).ConfigureAwait(false)).Value;
            using var target = OpenDestination(destination, length);
            await response.Content.CopyToAsync(target, _shutdown.Token).ConfigureAwait(false);
            bytesRead = (uint)target.Position;
        }
        catch (RequestFailedException ex) when (ex.Status == 404)
        {
            error = DeviceErrorCodes.NotFound;
            StorageLogMessages.AzureSegmentNotFound(_logger, blobName, segmentId);
        }
        catch (Exception ex)
        {
            error = ErrorCodeOf(ex);
            StorageLogMessages.AzureReadFailed(_logger, ex, blobName, offset, length, error);
        }
        finally
        {
            Interlocked.Decrement(ref _pendingOperations);
        }

        DeviceCompletion.Invoke(callback, error, bytesRead, context, _logger);
    }

    private async Task RemoveCoreAsync(int segment, AsyncCallback callback, IAsyncResult? result)
    {
        string blobName = GetBlobName(segment);
        if (Volatile.Read(ref _disposed) == 0)
        {
            try
            {
                await Container.GetPageBlobClient(blobName).DeleteIfExistsAsync(DeleteSnapshotsOption.None, LeaseConditions(), _shutdown.Token)
                    .ConfigureAwait(false);
            }
            catch (Exception ex)
            {
                NoteFencing(ex);
                StorageLogMessages.AzureRemoveFailed(_logger, ex, blobName);
            }
        }

        DeviceCompletion.Invoke(callback, result, _logger);
    }

    private async Task<PageBlobClient> CreateSegmentAsync(int segmentId)
    {
        await EnsureContainerAsync().ConfigureAwait(false);
        var blob = Container.GetPageBlobClient(GetBlobName(segmentId));

        // An existing blob (written by an earlier instance) is kept as it is.
        try
        {
            await blob.CreateIfNotExistsAsync(BlobSize, cancellationToken: _shutdown.Token).ConfigureAwait(false);
        }
        catch (RequestFailedException ex) when (ex.Status == 412)
        {
            // It exists and is leased: the create's lease check answered before its existence check.
        }

        if (_leaseId is { } leaseId)
        {
            await LeaseSegmentAsync(blob, leaseId).ConfigureAwait(false);
        }

        return blob;
    }

    private Task EnsureContainerAsync()
    {
        if (!_createContainer)
        {
            return Task.CompletedTask;
        }

        lock (_containerGate)
        {
            if (_containerReady is null || _containerReady.IsFaulted || _containerReady.IsCanceled)
            {
                _containerReady = Container.CreateIfNotExistsAsync(cancellationToken: _shutdown.Token);
            }

            return _containerReady;
        }
    }
}
