using Microsoft.Extensions.Hosting;
using Microsoft.Extensions.Logging;
using Microsoft.Extensions.Options;

namespace Dse.Hosting;

/// <summary>
/// The StateObjects' lifetime in a host. Start: builds every registered StateObject and connects them to the
/// coordinator in the background, retrying an unreachable coordinator with backoff, without holding the host's start
/// (readiness tells when they are connected). Stop: ends the connect retries; once every hosted service stopped (the
/// web server and the application's own services, whatever their registration order), persists each connected
/// StateObject's current version, waits at most <see cref="DseHostingOptions.ShutdownTimeout"/> for it to commit, then
/// disposes every StateObject.
/// </summary>
internal sealed class DseHostedService(
    DseStateObjects stateObjects,
    IDseCoordinator coordinator,
    IOptions<DseHostingOptions> options,
    ILogger<DseHostedService> logger,
    TimeProvider? timeProvider = null) : IHostedLifecycleService, IDseReadiness, IDisposable
{
    private readonly TimeProvider _time = timeProvider ?? TimeProvider.System;
    private readonly CancellationTokenSource _stopping = new();
    private readonly TaskCompletionSource _ready = new(TaskCreationOptions.RunContinuationsAsynchronously);
    private readonly string _coordinatorName = DseCoordinators.Describe(coordinator);

    // Set once by StartAsync, before the connect loops run; read by health checks.
    private volatile DseConnection[]? _connections;
    private Task _connecting = Task.CompletedTask;

    /// <summary>The StateObjects and how their connects are going; <c>null</c> until the host started.</summary>
    public IReadOnlyList<DseConnection>? Connections => _connections;

    /// <summary>Cancelled when the host stops: ends the work health checks start.</summary>
    public CancellationToken Stopping => _stopping.Token;

    /// <summary>The coordinator the StateObjects connect to, as logs name it.</summary>
    public string CoordinatorName => _coordinatorName;

    public bool IsReady => _ready.Task.IsCompletedSuccessfully;

    public Task WhenReadyAsync(CancellationToken cancellationToken = default) => _ready.Task.WaitAsync(cancellationToken);

    public Task StartAsync(CancellationToken cancellationToken)
    {
        if (_connections is not null)
        {
            throw new InvalidOperationException("The DSE hosted service was started already; a host starts once.");
        }

        // Built here so that a factory's error fails the host's start.
        var all = stateObjects.All();
        var connections = new DseConnection[all.Count];
        for (int i = 0; i < connections.Length; i++)
        {
            connections[i] = new DseConnection(all[i], _time);
        }

        _connections = connections;
        DseHostingLogMessages.Connecting(logger, connections.Length, _coordinatorName);
        var stopping = _stopping.Token;
        _connecting = Task.Run(() => ConnectAllAsync(connections, stopping), CancellationToken.None);
        return Task.CompletedTask;
    }

    public Task StartingAsync(CancellationToken cancellationToken) => Task.CompletedTask;

    public Task StartedAsync(CancellationToken cancellationToken) => Task.CompletedTask;

    public Task StoppingAsync(CancellationToken cancellationToken) => Task.CompletedTask;

    /// <summary>Ends the connect retries: a StateObject not connected by now stays unconnected.</summary>
    public async Task StopAsync(CancellationToken cancellationToken)
    {
        await _stopping.CancelAsync().ConfigureAwait(false);
        await _connecting.ConfigureAwait(false);
    }

    /// <summary>After every hosted service stopped, so nothing uses the StateObjects any more: persist, commit, dispose.</summary>
    public async Task StoppedAsync(CancellationToken cancellationToken)
    {
        var connections = _connections;
        if (connections is null)
        {
            return;
        }

        await StopAsync(cancellationToken).ConfigureAwait(false);
        var timeout = options.Value.ShutdownTimeout;
        DseHostingLogMessages.Stopping(logger, connections.Length, timeout);
        var commits = new Task[connections.Length];
        for (int i = 0; i < connections.Length; i++)
        {
            commits[i] = PersistAndCommitAsync(connections[i].StateObject, timeout, cancellationToken);
        }

        await Task.WhenAll(commits).ConfigureAwait(false);
        foreach (var connection in connections)
        {
            try
            {
                await connection.StateObject.DisposeAsync().ConfigureAwait(false);
            }
            catch (Exception ex)
            {
                DseHostingLogMessages.DisposeFailed(logger, connection.StateObject.Id, ex);
            }
        }
    }

    public void Dispose()
    {
        _ready.TrySetCanceled();
        _stopping.Dispose();
    }

    private async Task ConnectAllAsync(DseConnection[] connections, CancellationToken stopping)
    {
        var attempts = new Task[connections.Length];
        for (int i = 0; i < connections.Length; i++)
        {
            // Concurrently: a cold start on the coordinator answers nobody until every expected participant connected.
            attempts[i] = ConnectAsync(connections[i], stopping);
        }

        await Task.WhenAll(attempts).ConfigureAwait(false);
        foreach (var connection in connections)
        {
            if (connection.Failure is { } failure)
            {
                _ready.TrySetException(new InvalidOperationException($"StateObject {connection.StateObject.Id} cannot connect to coordinator {_coordinatorName}: {failure.Message}", failure));
                return;
            }
        }

        if (stopping.IsCancellationRequested)
        {
            _ready.TrySetCanceled(stopping);
            return;
        }

        DseHostingLogMessages.Ready(logger, connections.Length);
        _ready.TrySetResult();
    }

    /// <summary>Connects one StateObject, retrying while the coordinator is unreachable; never throws.</summary>
    private async Task ConnectAsync(DseConnection connection, CancellationToken stopping)
    {
        var stateObject = connection.StateObject;
        var delay = DseHostingOptions.FirstConnectRetryDelay;
        var maxDelay = options.Value.MaxConnectRetryDelay;
        while (true)
        {
            int attempt = connection.BeginAttempt();
            try
            {
                await stateObject.ConnectAsync(coordinator, stopping).ConfigureAwait(false);
                connection.Connected();
                DseHostingLogMessages.Connected(logger, stateObject.Id, _coordinatorName, attempt);
                return;
            }
            catch (OperationCanceledException) when (stopping.IsCancellationRequested)
            {
                return;
            }
            catch (Exception ex) when (IsTransient(ex))
            {
                connection.Retrying(ex);
                DseHostingLogMessages.ConnectRetrying(logger, stateObject.Id, _coordinatorName, attempt, ex.Message, delay);
            }
            catch (Exception ex)
            {
                connection.Failed(ex);
                DseHostingLogMessages.ConnectFailed(logger, stateObject.Id, _coordinatorName, ex);
                return;
            }

            try
            {
                await Task.Delay(delay, _time, stopping).ConfigureAwait(false);
            }
            catch (OperationCanceledException)
            {
                return;
            }

            delay = TimeSpan.FromTicks(Math.Min(delay.Ticks * 2, maxDelay.Ticks));
        }
    }

    /// <summary>
    /// Whether a failed connect is worth retrying: the coordinator could not be reached or timed out, or storage
    /// failed to answer. A refusal (an unexpected participant, a malformed listing) or corrupt storage is final.
    /// </summary>
    private static bool IsTransient(Exception exception) => exception switch
    {
        DseCoordinatorException refused => refused.Code == CoordinatorErrorCode.Unavailable,
        IOException or TimeoutException or HttpRequestException or OperationCanceledException => true,
        _ => false,
    };

    /// <summary>
    /// Persists the current version (bounded only by the host's token: it waits for running actions to end, then hands
    /// the version to Persist) and waits at most <paramref name="timeout"/> for it to commit; logs instead of throwing.
    /// </summary>
    private async Task PersistAndCommitAsync(StateObject stateObject, TimeSpan timeout, CancellationToken hostStopping)
    {
        if (!stateObject.IsConnected || stateObject.Fault is not null)
        {
            return;
        }

        long version = stateObject.CurrentVersion;
        long worldLine = stateObject.WorldLine;
        using var deadline = new CancellationTokenSource(timeout, _time);
        using var bounded = CancellationTokenSource.CreateLinkedTokenSource(deadline.Token, hostStopping);
        try
        {
            // Everything before the current version was handed to Persist already; so is the current one afterwards.
            await stateObject.AdvanceVersionAsync(hostStopping).ConfigureAwait(false);
            await stateObject.WaitForCommitAsync(version, worldLine, bounded.Token).ConfigureAwait(false);
            DseHostingLogMessages.CommittedAtStop(logger, stateObject.Id, version);
        }
        catch (OperationCanceledException) when (bounded.IsCancellationRequested)
        {
            DseHostingLogMessages.CommitTimedOut(logger, stateObject.Id, version, timeout);
        }
        catch (Exception ex)
        {
            DseHostingLogMessages.CommitFailedAtStop(logger, stateObject.Id, version, ex);
        }
    }
}
