using FASTER.core;

namespace Dse.Storage;

/// <summary>
/// Base of devices that wrap another device and forward to it: sector size, name and capacity come from the
/// inner device, and every operation is passed through unless a derived class intercepts it.
/// </summary>
public abstract class DelegatingDevice : StorageDeviceBase
{
    private readonly bool _ownsInner;
    private int _disposed;

    /// <summary>Wraps <paramref name="inner"/>.</summary>
    /// <param name="inner">The device to forward to.</param>
    /// <param name="ownsInner">Whether disposing this device disposes <paramref name="inner"/>.</param>
    protected DelegatingDevice(IDevice inner, bool ownsInner)
        : base(NotNull(inner).FileName, inner.SectorSize, inner.Capacity)
    {
        Inner = inner;
        _ownsInner = ownsInner;
    }

    /// <summary>The wrapped device.</summary>
    public IDevice Inner { get; }

    /// <summary>Whether <see cref="Dispose"/> has run.</summary>
    protected bool IsDisposed => Volatile.Read(ref _disposed) != 0;

    /// <inheritdoc />
    public override void Initialize(long segmentSize, LightEpoch? epoch = null, bool omitSegmentIdFromFilename = false)
    {
        base.Initialize(segmentSize, epoch, omitSegmentIdFromFilename);
        Inner.Initialize(segmentSize, epoch, omitSegmentIdFromFilename);
    }

    /// <inheritdoc />
    public override void WriteAsync(IntPtr sourceAddress, int segmentId, ulong destinationAddress, uint numBytesToWrite,
        DeviceIOCompletionCallback callback, object? context)
        => Inner.WriteAsync(sourceAddress, segmentId, destinationAddress, numBytesToWrite, callback, context);

    /// <inheritdoc />
    public override void ReadAsync(int segmentId, ulong sourceAddress, IntPtr destinationAddress, uint readLength,
        DeviceIOCompletionCallback callback, object? context)
        => Inner.ReadAsync(segmentId, sourceAddress, destinationAddress, readLength, callback, context);

    /// <inheritdoc />
    public override void RemoveSegment(int segment) => Inner.RemoveSegment(segment);

    /// <inheritdoc />
    public override void RemoveSegmentAsync(int segment, AsyncCallback callback, IAsyncResult? result)
        => Inner.RemoveSegmentAsync(segment, callback, result);

    /// <inheritdoc />
    public override bool Throttle() => Inner.Throttle();

    /// <inheritdoc />
    public override bool TryComplete() => Inner.TryComplete();

    /// <inheritdoc />
    public override long GetFileSize(int segment) => Inner.GetFileSize(segment);

    /// <inheritdoc />
    public override void Reset() => Inner.Reset();

    /// <summary>Disposes this device once, and the inner device when it is owned.</summary>
    public override void Dispose()
    {
        if (Interlocked.Exchange(ref _disposed, 1) != 0)
        {
            return;
        }

        try
        {
            DisposeCore();
        }
        finally
        {
            if (_ownsInner)
            {
                Inner.Dispose();
            }
        }
    }

    /// <summary>Releases what the derived device holds; runs once, before the inner device is disposed.</summary>
    protected virtual void DisposeCore()
    {
    }

    private static IDevice NotNull(IDevice inner)
    {
        ArgumentNullException.ThrowIfNull(inner);
        return inner;
    }
}
