using Dse.Storage;
using FASTER.core;

namespace Dse.Darq.Tests;

/// <summary>A device whose writes can be held back (not issued to the inner device) and released later, to fill log memory on purpose.</summary>
internal sealed class HoldingDevice(IDevice inner) : DelegatingDevice(inner, ownsInner: true)
{
    private readonly Lock _lock = new();
    private List<Action>? _held;

    /// <summary>How many writes are held back.</summary>
    public int HeldCount
    {
        get
        {
            lock (_lock)
            {
                return _held?.Count ?? 0;
            }
        }
    }

    /// <summary>From now on, writes wait until <see cref="Release"/>.</summary>
    public void Hold()
    {
        lock (_lock)
        {
            _held ??= [];
        }
    }

    /// <summary>Issues the held writes, in order, and lets later writes through.</summary>
    public void Release()
    {
        List<Action>? held;
        lock (_lock)
        {
            held = _held;
            _held = null;
        }

        foreach (var write in held ?? [])
        {
            write();
        }
    }

    public override void WriteAsync(IntPtr sourceAddress, int segmentId, ulong destinationAddress, uint numBytesToWrite,
        DeviceIOCompletionCallback callback, object? context)
    {
        lock (_lock)
        {
            if (_held is not null)
            {
                _held.Add(() => base.WriteAsync(sourceAddress, segmentId, destinationAddress, numBytesToWrite, callback, context));
                return;
            }
        }

        base.WriteAsync(sourceAddress, segmentId, destinationAddress, numBytesToWrite, callback, context);
    }
}
