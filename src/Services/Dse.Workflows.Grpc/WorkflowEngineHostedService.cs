using Dse.Hosting;
using Microsoft.Extensions.DependencyInjection;
using Microsoft.Extensions.Hosting;
using Microsoft.Extensions.Logging;

namespace Dse.Workflows.Grpc;

/// <summary>
/// The workflow engine's lifetime in a host. Start: builds the engine (a missing log fails the host's start), then, in
/// the background, waits until the DSE runtime connected the log (<see cref="IDseReadiness"/>) and starts the engine,
/// which loads the history and resumes open workflows; the host's start does not wait for that. Stop: disposes the
/// engine in <see cref="StopAsync"/>, after the web server stopped serving and before the DSE runtime persists and
/// disposes the log (it does that once every hosted service stopped).
/// </summary>
internal sealed class WorkflowEngineHostedService(IServiceProvider services, IDseReadiness readiness, ILogger<WorkflowEngineHostedService> logger)
    : IHostedService, IDisposable
{
    private readonly CancellationTokenSource _stopping = new();

    // Set once by StartAsync; read by health checks.
    private volatile WorkflowEngine? _engine;
    private volatile Exception? _failure;
    private volatile bool _started;
    private Task _starting = Task.CompletedTask;

    /// <summary>The engine, once the host started.</summary>
    public WorkflowEngine? Engine => _engine;

    /// <summary>Why the engine could not start; <c>null</c> while it starts or once it serves.</summary>
    public Exception? Failure => _failure;

    /// <summary>Whether the engine has loaded its history at least once.</summary>
    public bool IsStarted => _started;

    public Task StartAsync(CancellationToken cancellationToken)
    {
        if (_engine is not null)
        {
            throw new InvalidOperationException("The workflow engine's hosted service was started already; a host starts once.");
        }

        // Built here so that a registration mistake (no SpeculativeLog) fails the host's start.
        var engine = services.GetRequiredService<WorkflowEngine>();
        _engine = engine;
        WorkflowsHostingLogMessages.Waiting(logger, engine.Log.Id);
        var stopping = _stopping.Token;
        _starting = Task.Run(() => StartEngineAsync(engine, stopping), CancellationToken.None);
        return Task.CompletedTask;
    }

    public async Task StopAsync(CancellationToken cancellationToken)
    {
        await _stopping.CancelAsync().ConfigureAwait(false);
        await _starting.ConfigureAwait(false);
        if (_engine is { } engine)
        {
            await engine.DisposeAsync().ConfigureAwait(false);
            WorkflowsHostingLogMessages.Stopped(logger);
        }
    }

    public void Dispose() => _stopping.Dispose();

    /// <summary>Starts the engine once the log is connected; never throws (a failure is logged, reported by health, and disposes the engine).</summary>
    private async Task StartEngineAsync(WorkflowEngine engine, CancellationToken stopping)
    {
        try
        {
            await readiness.WhenReadyAsync(stopping).ConfigureAwait(false);
            await engine.StartAsync(stopping).ConfigureAwait(false);
            _started = true;
            WorkflowsHostingLogMessages.Serving(logger);
        }
        catch (OperationCanceledException) when (stopping.IsCancellationRequested)
        {
            // The host stops first.
        }
        catch (Exception ex)
        {
            _failure = ex;
            WorkflowsHostingLogMessages.StartFailed(logger, ex);

            // Calls waiting for the engine fail with UNAVAILABLE rather than wait for their deadline.
            await engine.DisposeAsync().ConfigureAwait(false);
        }
    }
}
