using Dse.Storage;
using FASTER.core;

namespace Dse.Darq.Tests;

/// <summary>Forwards to a device and records whether it was disposed.</summary>
internal sealed class DisposeTrackingDevice(IDevice inner) : DelegatingDevice(inner, ownsInner: true)
{
    private int _disposed;

    public bool Disposed => Volatile.Read(ref _disposed) != 0;

    protected override void DisposeCore()
    {
        Volatile.Write(ref _disposed, 1);
        base.DisposeCore();
    }
}
