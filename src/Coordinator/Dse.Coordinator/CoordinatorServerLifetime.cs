using Microsoft.Extensions.DependencyInjection;
using Microsoft.Extensions.Hosting;
using Microsoft.Extensions.Logging;

namespace Dse.Coordinator;

/// <summary>
/// Opens the <see cref="CoordinatorServer"/> before any hosted service starts (so before the web server listens) and
/// disposes it after every hosted service stopped (so after the last request finished): coordinator, then log. With
/// <see cref="CoordinatorServerOptions.StopHostOnFault"/> it stops the host once the coordinator stopped serving.
/// </summary>
internal sealed class CoordinatorServerLifetime(
    IServiceProvider services,
    Func<IServiceProvider, ICoordinatorLog> createLog,
    CoordinatorServerOptions options,
    ILoggerFactory loggerFactory) : IHostedLifecycleService, IAsyncDisposable
{
    // Ends the fault watch when the host stops for another reason.
    private readonly CancellationTokenSource _stopWatching = new();
    private CoordinatorServer? _server;
    private Task _faultWatch = Task.CompletedTask;

    /// <summary>The open server; the host must have started.</summary>
    public CoordinatorServer Server => Volatile.Read(ref _server)
        ?? throw new InvalidOperationException("The DSE coordinator is not open yet: it opens when the host starts.");

    public async Task StartingAsync(CancellationToken cancellationToken)
    {
        if (_server is not null)
        {
            throw new InvalidOperationException("The DSE coordinator is already open; a host starts once.");
        }

        var log = createLog(services) ?? throw new InvalidOperationException("The coordinator log factory passed to AddDseCoordinator returned null.");
        Volatile.Write(ref _server, await CoordinatorServer.OpenAsync(log, options, loggerFactory, cancellationToken).ConfigureAwait(false));
    }

    public Task StartAsync(CancellationToken cancellationToken) => Task.CompletedTask;

    public Task StartedAsync(CancellationToken cancellationToken)
    {
        if (options.StopHostOnFault)
        {
            var lifetime = services.GetRequiredService<IHostApplicationLifetime>();
            _faultWatch = StopOnFaultAsync(Server.Coordinator, lifetime, loggerFactory.CreateLogger<CoordinatorServerLifetime>(), _stopWatching.Token);
        }

        return Task.CompletedTask;
    }

    public Task StoppingAsync(CancellationToken cancellationToken) => _stopWatching.CancelAsync();

    public Task StopAsync(CancellationToken cancellationToken) => Task.CompletedTask;

    public async Task StoppedAsync(CancellationToken cancellationToken) => await DisposeAsync().ConfigureAwait(false);

    /// <summary>Also reached when the host failed to start after the coordinator opened (its port was taken).</summary>
    public async ValueTask DisposeAsync()
    {
        await _stopWatching.CancelAsync().ConfigureAwait(false);
        await _faultWatch.ConfigureAwait(false);
        if (Volatile.Read(ref _server) is { } server)
        {
            await server.DisposeAsync().ConfigureAwait(false);
        }
    }

    /// <summary>Waits for the coordinator to stop serving (<see cref="ClusterCoordinator.Faulted"/>), then stops the host.</summary>
    private static async Task StopOnFaultAsync(ClusterCoordinator coordinator, IHostApplicationLifetime lifetime, ILogger logger, CancellationToken cancellationToken)
    {
        try
        {
            await coordinator.Faulted.WaitAsync(cancellationToken).ConfigureAwait(false);
        }
        catch (OperationCanceledException) when (cancellationToken.IsCancellationRequested)
        {
            return;
        }

        var fault = coordinator.Fault!;
        CoordinatorServiceMessages.StoppingOnFault(logger, fault.Message, fault);
        lifetime.StopApplication();
    }
}
