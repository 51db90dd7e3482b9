using Dse.Darq.Grpc;
using Microsoft.Extensions.Hosting;
using Microsoft.Extensions.Logging;
using Microsoft.Extensions.Options;

namespace Dse.Darq.Hosting;

/// <summary>
/// The DARQs' lifetime in a host. Start: opens every registered DARQ (recovering its storage) in registration order,
/// before the web server starts, and makes it resolvable by name (<see cref="IDarqResolver"/>); a DARQ without its own
/// <see cref="DarqOptions.Destinations"/> delivers OUT messages to the host's other DARQs in process and to the
/// remote destinations by gRPC. A DARQ that cannot open fails the start (the ones already open are closed). Stop: once
/// every hosted service stopped (the web server included), closes the DARQs in reverse order, each committing what it
/// appended. Disposing closes the DARQs too: a host whose start fails after this service started (for example the web
/// server cannot bind its port) never stops it, only disposes it.
/// </summary>
internal sealed class DarqHostedService(
    DarqHostRegistry registrations,
    DarqRegistry registry,
    IOptionsMonitor<DarqOptions> options,
    ILoggerFactory loggerFactory) : IHostedLifecycleService, IAsyncDisposable, IDisposable
{
    private readonly ILogger _logger = loggerFactory.CreateLogger<DarqHostedService>();
    private readonly List<Darq> _open = [];
    private GrpcDarqDestinations? _destinations;

    public async Task StartAsync(CancellationToken cancellationToken)
    {
        if (_destinations is not null)
        {
            throw new InvalidOperationException("The DARQ hosted service was started already; a host starts once.");
        }

        var local = new DarqDestinationRegistry();
        _destinations = new GrpcDarqDestinations(local);
        foreach (var remote in registrations.RemoteDestinations)
        {
            _destinations.Add(remote.Name, remote.Address, remote.RemoteName);
            DarqHostingLogMessages.RemoteDestination(_logger, remote.Name, remote.RemoteName, remote.Address);
        }

        DarqHostingLogMessages.Opening(_logger, registrations.Names.Count, string.Join(", ", registrations.Names));
        try
        {
            foreach (string name in registrations.Names)
            {
                var darqOptions = options.Get(name);
                darqOptions.Destinations ??= _destinations;
                Darq darq;
                try
                {
                    darq = await Darq.OpenAsync(darqOptions, loggerFactory, cancellationToken).ConfigureAwait(false);
                }
                catch (Exception e) when (e is ArgumentException or InvalidDataException or IOException)
                {
                    throw new InvalidOperationException($"DARQ '{name}' could not open: {e.Message}", e);
                }

                _open.Add(darq);
                local.Add(darq);
                registry.Add(darq);
                DarqHostingLogMessages.Opened(_logger, name);
            }
        }
        catch
        {
            await CloseAllAsync().ConfigureAwait(false);
            throw;
        }
    }

    public Task StartingAsync(CancellationToken cancellationToken) => Task.CompletedTask;

    public Task StartedAsync(CancellationToken cancellationToken) => Task.CompletedTask;

    public Task StoppingAsync(CancellationToken cancellationToken) => Task.CompletedTask;

    public Task StopAsync(CancellationToken cancellationToken) => Task.CompletedTask;

    /// <summary>After every hosted service stopped, so no call uses the DARQs any more: close them.</summary>
    public Task StoppedAsync(CancellationToken cancellationToken) => CloseAllAsync();

    /// <summary>Closes the DARQs a stop did not close (the host's start failed after this service started), then the channels.</summary>
    public async ValueTask DisposeAsync()
    {
        await CloseAllAsync().ConfigureAwait(false);
        _destinations?.Dispose();
    }

    /// <summary>For a container disposed synchronously: the same as <see cref="DisposeAsync"/>.</summary>
    public void Dispose() => DisposeAsync().AsTask().GetAwaiter().GetResult();

    private async Task CloseAllAsync()
    {
        for (int i = _open.Count - 1; i >= 0; i--)
        {
            var darq = _open[i];
            registry.Remove(darq.Name);
            try
            {
                await darq.DisposeAsync().ConfigureAwait(false);
                DarqHostingLogMessages.Closed(_logger, darq.Name);
            }
#pragma warning disable CA1031 // Closing the others matters more than one DARQ's error, which is logged.
            catch (Exception e)
#pragma warning restore CA1031
            {
                DarqHostingLogMessages.CloseFailed(_logger, e, darq.Name);
            }
        }

        _open.Clear();
    }
}
