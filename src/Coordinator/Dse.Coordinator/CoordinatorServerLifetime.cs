using Microsoft.Extensions.Hosting;
using Microsoft.Extensions.Logging;

namespace Dse.Coordinator;

/// <summary>
/// Opens the <see cref="CoordinatorServer"/> before any hosted service starts (so before the web server listens) and
/// disposes it after every hosted service stopped (so after the last request finished): coordinator, then log.
/// </summary>
internal sealed class CoordinatorServerLifetime(
    IServiceProvider services,
    Func<IServiceProvider, ICoordinatorLog> createLog,
    CoordinatorServerOptions options,
    ILoggerFactory loggerFactory) : IHostedLifecycleService, IAsyncDisposable
{
    private CoordinatorServer? _server;

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

    public Task StartedAsync(CancellationToken cancellationToken) => Task.CompletedTask;

    public Task StoppingAsync(CancellationToken cancellationToken) => Task.CompletedTask;

    public Task StopAsync(CancellationToken cancellationToken) => Task.CompletedTask;

    public async Task StoppedAsync(CancellationToken cancellationToken) => await DisposeAsync().ConfigureAwait(false);

    /// <summary>Also reached when the host failed to start after the coordinator opened (its port was taken).</summary>
    public ValueTask DisposeAsync() => Volatile.Read(ref _server)?.DisposeAsync() ?? ValueTask.CompletedTask;
}
