using FASTER.core;

namespace Dse.Storage.Tests.Infrastructure;

/// <summary>
/// One kind of device under test: opens any number of device instances over the same underlying storage (each
/// reopen sees what earlier instances wrote) and cleans the storage up at the end.
/// </summary>
public abstract class DeviceHarness : IAsyncDisposable
{
    private readonly List<IDevice> _open = [];

    /// <summary>Whether misaligned reads and writes complete with a nonzero error code on this device.</summary>
    public virtual bool RejectsMisalignedRequests => true;

    /// <summary>Opens a new device instance over the harness's storage; it is closed at the latest when the harness is disposed.</summary>
    public IDevice Open()
    {
        var device = CreateDevice();
        lock (_open)
        {
            _open.Add(device);
        }

        return device;
    }

    /// <summary>Disposes a device opened by <see cref="Open"/> (a clean close or a simulated crash: the devices buffer nothing).</summary>
    public void Close(IDevice device)
    {
        lock (_open)
        {
            if (!_open.Remove(device))
            {
                return;
            }
        }

        device.Dispose();
    }

    public async ValueTask DisposeAsync()
    {
        IDevice[] open;
        lock (_open)
        {
            open = [.. _open];
            _open.Clear();
        }

        foreach (var device in open)
        {
            device.Dispose();
        }

        await DisposeStorageAsync();
        GC.SuppressFinalize(this);
    }

    public override string ToString() => GetType().Name;

    protected abstract IDevice CreateDevice();

    protected virtual ValueTask DisposeStorageAsync() => ValueTask.CompletedTask;
}
