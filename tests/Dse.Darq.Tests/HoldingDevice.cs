using Dse.Storage;
using FASTER.core;

namespace Dse.Darq.Tests;

/// <summary>
/// A device whose writes, or reads, can be held back (not issued to the inner device) and released later: held writes
/// fill log memory on purpose, a held read stops a reader between two points on purpose.
/// </summary>
internal sealed class HoldingDevice(IDevice inner) : DelegatingDevice(inner, ownsInner: true)
{
    private readonly Lock _lock = new();
    private readonly TaskCompletionSource _firstReadHeld = new(TaskCreationOptions.RunContinuationsAsynchronously);
    private readonly ManualResetEventSlim _disposeReleased = new(initialState: true);
    private readonly TaskCompletionSource _disposeHeld = new(TaskCreationOptions.RunContinuationsAsynchronously);
    private List<Action>? _heldWrites;
    private List<Action>? _heldReads;

    /// <summary>How many writes are held back.</summary>
    public int HeldCount
    {
        get
        {
            lock (_lock)
            {
                return _heldWrites?.Count ?? 0;
            }
        }
    }

    /// <summary>
    /// Only reads of at least this many bytes are held (default 0: every read). A scan checks a record's length word with
    /// a one-sector read that honours cancellation; a test that needs the page read, which does not, holds only that.
    /// </summary>
    public uint HeldReadMinLength { get; set; }

    /// <summary>Completes when the first read is held back after <see cref="HoldReads"/>.</summary>
    public Task FirstReadHeld => _firstReadHeld.Task;

    /// <summary>From now on, writes wait until <see cref="Release"/>.</summary>
    public void Hold()
    {
        lock (_lock)
        {
            _heldWrites ??= [];
        }
    }

    /// <summary>From now on, reads wait until <see cref="ReleaseReads"/>.</summary>
    public void HoldReads()
    {
        lock (_lock)
        {
            _heldReads ??= [];
        }
    }

    /// <summary>From now on, <see cref="IDisposable.Dispose"/> blocks until <see cref="ReleaseDispose"/>, as a device waiting for an I/O that never returns does.</summary>
    public void HoldDispose() => _disposeReleased.Reset();

    /// <summary>Lets a held <see cref="IDisposable.Dispose"/> finish.</summary>
    public void ReleaseDispose() => _disposeReleased.Set();

    /// <summary>Completes when a <see cref="IDisposable.Dispose"/> is held.</summary>
    public Task DisposeHeld => _disposeHeld.Task;

    /// <summary>Issues the held writes, in order, and lets later writes through.</summary>
    public void Release() => Issue(ref _heldWrites);

    /// <summary>Issues the held reads, in order, and lets later reads through.</summary>
    public void ReleaseReads() => Issue(ref _heldReads);

    public override void WriteAsync(IntPtr sourceAddress, int segmentId, ulong destinationAddress, uint numBytesToWrite,
        DeviceIOCompletionCallback callback, object? context)
    {
        if (!TryHold(ref _heldWrites, () => base.WriteAsync(sourceAddress, segmentId, destinationAddress, numBytesToWrite, callback, context)))
        {
            base.WriteAsync(sourceAddress, segmentId, destinationAddress, numBytesToWrite, callback, context);
        }
    }

    public override void ReadAsync(int segmentId, ulong sourceAddress, IntPtr destinationAddress, uint readLength,
        DeviceIOCompletionCallback callback, object? context)
    {
        if (readLength >= HeldReadMinLength && TryHold(ref _heldReads, () => base.ReadAsync(segmentId, sourceAddress, destinationAddress, readLength, callback, context)))
        {
            _firstReadHeld.TrySetResult();
            return;
        }

        base.ReadAsync(segmentId, sourceAddress, destinationAddress, readLength, callback, context);
    }

    protected override void DisposeCore()
    {
        if (!_disposeReleased.IsSet)
        {
            _disposeHeld.TrySetResult();
            _disposeReleased.Wait();
        }

        base.DisposeCore();
    }

    /// <summary>Adds <paramref name="operation"/> to <paramref name="held"/> while that is holding; false when it is not.</summary>
    private bool TryHold(ref List<Action>? held, Action operation)
    {
        lock (_lock)
        {
            if (held is null)
            {
                return false;
            }

            held.Add(operation);
            return true;
        }
    }

    private void Issue(ref List<Action>? held)
    {
        List<Action>? operations;
        lock (_lock)
        {
            operations = held;
            held = null;
        }

        foreach (var operation in operations ?? [])
        {
            operation();
        }
    }
}
