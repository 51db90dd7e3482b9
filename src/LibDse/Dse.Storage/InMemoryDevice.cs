using FASTER.core;
using Microsoft.Extensions.Logging;
using Microsoft.Extensions.Logging.Abstractions;

namespace Dse.Storage;

/// <summary>
/// A FASTER device whose segments live in an <see cref="InMemoryStorage"/>. The storage outlives the device:
/// dispose a device (a simulated crash) and open a new one over the same storage to recover what was written.
/// </summary>
/// <remarks>
/// Data is copied into the storage before <c>WriteAsync</c> returns; only the completion callback is deferred
/// (unless <see cref="InMemoryDeviceOptions.CompleteSynchronously"/> is set). Requests must be sector-aligned and
/// stay inside one segment; a violation, a read of a missing segment, or any use after disposal completes with a
/// nonzero <see cref="DeviceErrorCodes"/> value.
/// </remarks>
public sealed class InMemoryDevice : StorageDeviceBase
{
    private static readonly InMemoryDeviceOptions DefaultOptions = new();

    private readonly bool _completeSynchronously;
    private readonly ILogger _logger;
    private int _disposed;

    /// <summary>Creates a device over existing or new storage.</summary>
    /// <param name="storage">The storage that holds the segments.</param>
    /// <param name="options">Device options; <see langword="null"/> for the defaults.</param>
    /// <param name="logger">Receives errors thrown by completion callbacks; <see langword="null"/> for none.</param>
    public InMemoryDevice(InMemoryStorage storage, InMemoryDeviceOptions? options = null, ILogger? logger = null)
        : base(Validated(options).Name, options?.SectorSize ?? DefaultOptions.SectorSize, options?.Capacity ?? DefaultOptions.Capacity)
    {
        options ??= DefaultOptions;
        ArgumentNullException.ThrowIfNull(storage);
        Storage = storage;
        _completeSynchronously = options.CompleteSynchronously;
        _logger = logger ?? NullLogger.Instance;

        // Reopening existing storage: report the segment range it already holds.
        var ids = storage.SegmentIds;
        if (ids.Count > 0)
        {
            startSegment = ids[0];
            endSegment = ids[^1];
        }
    }

    /// <summary>The storage holding this device's segments.</summary>
    public InMemoryStorage Storage { get; }

    /// <inheritdoc />
    public override unsafe void WriteAsync(IntPtr sourceAddress, int segmentId, ulong destinationAddress, uint numBytesToWrite,
        DeviceIOCompletionCallback callback, object? context)
    {
        uint error = Validate(segmentId, destinationAddress, numBytesToWrite);
        if (error == DeviceErrorCodes.Success)
        {
            HandleCapacity(segmentId);
            Storage.Write(segmentId, (long)destinationAddress, new ReadOnlySpan<byte>((void*)sourceAddress, (int)numBytesToWrite));
        }

        Complete(callback, error, error == DeviceErrorCodes.Success ? numBytesToWrite : 0, context);
    }

    /// <inheritdoc />
    public override unsafe void ReadAsync(int segmentId, ulong sourceAddress, IntPtr destinationAddress, uint readLength,
        DeviceIOCompletionCallback callback, object? context)
    {
        uint error = Validate(segmentId, sourceAddress, readLength);
        if (error == DeviceErrorCodes.Success
            && !Storage.TryRead(segmentId, (long)sourceAddress, new Span<byte>((void*)destinationAddress, (int)readLength)))
        {
            error = DeviceErrorCodes.NotFound;
        }

        Complete(callback, error, error == DeviceErrorCodes.Success ? readLength : 0, context);
    }

    /// <inheritdoc />
    public override void RemoveSegment(int segment)
    {
        if (Volatile.Read(ref _disposed) == 0)
        {
            Storage.RemoveSegment(segment);
        }
    }

    /// <inheritdoc />
    public override void RemoveSegmentAsync(int segment, AsyncCallback callback, IAsyncResult? result)
    {
        RemoveSegment(segment);
        DeviceCompletion.Invoke(callback, result, _logger);
    }

    /// <inheritdoc />
    public override long GetFileSize(int segment)
    {
        if (segmentSize > 0)
        {
            return segmentSize;
        }

        return Storage.TryGetSegmentLength(segment, out long length) ? length : 0;
    }

    /// <summary>Detaches the device; later requests fail with <see cref="DeviceErrorCodes.Disposed"/>. The storage is untouched.</summary>
    public override void Dispose() => Volatile.Write(ref _disposed, 1);

    private static InMemoryDeviceOptions Validated(InMemoryDeviceOptions? options)
    {
        // Runs before the base constructor, which takes the sector size and capacity as they are.
        options ??= DefaultOptions;
        options.Validate();
        return options;
    }

    private uint Validate(int segmentId, ulong offset, uint length)
    {
        if (Volatile.Read(ref _disposed) != 0)
        {
            return DeviceErrorCodes.Disposed;
        }

        ulong end = offset + length;
        bool misaligned = offset % SectorSize != 0 || length % SectorSize != 0;
        bool outsideSegment = segmentSize > 0 && end > (ulong)segmentSize;
        bool tooLarge = end > (ulong)Array.MaxLength;
        return segmentId < 0 || misaligned || outsideSegment || tooLarge ? DeviceErrorCodes.InvalidArgument : DeviceErrorCodes.Success;
    }

    private void Complete(DeviceIOCompletionCallback callback, uint errorCode, uint numBytes, object? context)
    {
        if (_completeSynchronously)
        {
            DeviceCompletion.Invoke(callback, errorCode, numBytes, context, _logger);
        }
        else
        {
            DeviceCompletion.Post(callback, errorCode, numBytes, context, _logger);
        }
    }
}
