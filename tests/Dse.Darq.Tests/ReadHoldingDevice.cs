using Dse.Storage;
using FASTER.core;

namespace Dse.Darq.Tests;

/// <summary>A device whose reads can be held back (not issued to the inner device) and released later, to stop a reader between two points on purpose.</summary>
internal sealed class ReadHoldingDevice(IDevice inner) : DelegatingDevice(inner, ownsInner: true)
{
    private readonly Lock _lock = new();
    private readonly TaskCompletionSource _firstHeld = new(TaskCreationOptions.RunContinuationsAsynchronously);
    private List<Action>? _held;

    /// <summary>Completes when the first read is held back after <see cref="Hold"/>.</summary>
    public Task FirstHeld => _firstHeld.Task;

    /// <summary>From now on, reads wait until <see cref="Release"/>.</summary>
    public void Hold()
    {
        lock (_lock)
        {
            _held ??= [];
        }
    }

    /// <summary>Issues the held reads, in order, and lets later reads through.</summary>
    public void Release()
    {
        List<Action>? held;
        lock (_lock)
        {
            held = _held;
            _held = null;
        }

        foreach (var read in held ?? [])
        {
            read();
        }
    }

    public override void ReadAsync(int segmentId, ulong sourceAddress, IntPtr destinationAddress, uint readLength,
        DeviceIOCompletionCallback callback, object? context)
    {
        lock (_lock)
        {
            if (_held is not null)
            {
                _held.Add(() => base.ReadAsync(segmentId, sourceAddress, destinationAddress, readLength, callback, context));
                _firstHeld.TrySetResult();
                return;
            }
        }

        base.ReadAsync(segmentId, sourceAddress, destinationAddress, readLength, callback, context);
    }
}
