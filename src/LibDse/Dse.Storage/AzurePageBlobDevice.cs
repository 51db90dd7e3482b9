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
/// </remarks>
public sealed class AzurePageBlobDevice : StorageDeviceBase
{
    /// <summary>The page size of page blobs, which is also this device's sector size.</summary>
    public const int PageSize = 512;

    private const uint MaxPutPagesBytes = 4 * 1024 * 1024;

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

    /// <summary>The number of writes and reads in flight.</summary>
    public int PendingOperations => Volatile.Read(ref _pendingOperations);

    /// <summary>The size of each segment's page blob: the segment size rounded up to 512, or the unsegmented size.</summary>
    public long BlobSize => segmentSize > 0 ? (segmentSize + PageSize - 1) / PageSize * PageSize : _unsegmentedBlobSize;

    /// <summary>Returns the name of the blob that holds a segment.</summary>
    /// <param name="segmentId">The segment id.</param>
    public string GetBlobName(int segmentId) => GetSegmentFilename(BlobNamePrefix, segmentId);

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
            Container.GetPageBlobClient(blobName).DeleteIfExists(cancellationToken: _shutdown.Token);
        }
        catch (Exception ex) when (ex is RequestFailedException or OperationCanceledException)
        {
            StorageLog.AzureRemoveFailed(_logger, ex, blobName);
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

    private uint Validate(int segmentId, ulong offset, uint length)
    {
        if (Volatile.Read(ref _disposed) != 0)
        {
            return DeviceErrorCodes.Disposed;
        }

        bool misaligned = offset % PageSize != 0 || length % PageSize != 0;
        bool outsideBlob = offset + length > (ulong)BlobSize;
        return segmentId < 0 || misaligned || outsideBlob ? DeviceErrorCodes.InvalidArgument : DeviceErrorCodes.Success;
    }

    private uint ErrorCodeOf(Exception exception) => exception switch
    {
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
                await blob.UploadPagesAsync(content, (long)(offset + done), options: null, _shutdown.Token).ConfigureAwait(false);
                done += chunk;
            }
        }
        catch (Exception ex)
        {
            error = ErrorCodeOf(ex);

            // Creation failed, or the blob vanished under us: forget it so that the next write creates it again.
            if (segment.IsFaulted || error == DeviceErrorCodes.NotFound)
            {
                _segments.TryRemove(KeyValuePair.Create(segmentId, segment));
            }

            StorageLog.AzureWriteFailed(_logger, ex, GetBlobName(segmentId), offset, length, error);
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
            StorageLog.AzureSegmentNotFound(_logger, blobName, segmentId);
        }
        catch (Exception ex)
        {
            error = ErrorCodeOf(ex);
            StorageLog.AzureReadFailed(_logger, ex, blobName, offset, length, error);
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
                await Container.GetPageBlobClient(blobName).DeleteIfExistsAsync(cancellationToken: _shutdown.Token).ConfigureAwait(false);
            }
            catch (Exception ex)
            {
                StorageLog.AzureRemoveFailed(_logger, ex, blobName);
            }
        }

        DeviceCompletion.Invoke(callback, result, _logger);
    }

    private async Task<PageBlobClient> CreateSegmentAsync(int segmentId)
    {
        await EnsureContainerAsync().ConfigureAwait(false);
        var blob = Container.GetPageBlobClient(GetBlobName(segmentId));

        // An existing blob (written by an earlier instance) is kept as it is.
        await blob.CreateIfNotExistsAsync(BlobSize, cancellationToken: _shutdown.Token).ConfigureAwait(false);
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
