using Dse.Grpc;
using Microsoft.Extensions.Logging;
using Microsoft.Extensions.Logging.Abstractions;

namespace Dse.Coordinator;

/// <summary>
/// A durable coordinator ready to serve: its log (opened and fenced), the journal over it, and the
/// <see cref="ClusterCoordinator"/> recovered from it. <c>AddDseCoordinator</c> opens one when the web host starts,
/// serves it over gRPC and disposes it after the host stopped.
/// </summary>
public sealed class CoordinatorServer : IAsyncDisposable
{
    private readonly ILogger _logger;
    private int _disposed;

    private CoordinatorServer(ICoordinatorLog log, ClusterCoordinator coordinator, CoordinatorServerOptions options, DseCredentials? credentials, ILogger logger)
    {
        Log = log;
        Credentials = credentials;
        Coordinator = coordinator;
        Options = options;
        _logger = logger;
    }

    /// <summary>The coordinator's state machine.</summary>
    public ClusterCoordinator Coordinator { get; }

    /// <summary>The log the coordinator journals to; owned by this instance.</summary>
    public ICoordinatorLog Log { get; }

    /// <summary>
    /// The participants file read from <see cref="CoordinatorServerOptions.ParticipantsFile"/>, or <c>null</c> when calls
    /// are not authenticated.
    /// </summary>
    public DseCredentials? Credentials { get; }

    /// <summary>The options it was opened with.</summary>
    public CoordinatorServerOptions Options { get; }

    /// <summary>
    /// Opens <paramref name="log"/> (fencing out older coordinators), replays its journal and opens the coordinator on
    /// it as a new incarnation. Takes ownership of <paramref name="log"/>: it is disposed with this instance, or before
    /// this method throws.
    /// </summary>
    /// <param name="log">A log that was not opened yet.</param>
    /// <param name="options">Options; default <see cref="CoordinatorServerOptions"/>.</param>
    /// <param name="loggerFactory">Logger factory for the coordinator and the service; default none.</param>
    /// <param name="cancellationToken">Cancels opening.</param>
    /// <exception cref="ArgumentException">An option is invalid; the message names it.</exception>
    /// <exception cref="CoordinatorLogFencedException">Another coordinator holds the log.</exception>
    /// <exception cref="InvalidDataException">The log or the journal in it is corrupt, or the participants file does not parse.</exception>
    public static async Task<CoordinatorServer> OpenAsync(ICoordinatorLog log, CoordinatorServerOptions? options = null, ILoggerFactory? loggerFactory = null, CancellationToken cancellationToken = default)
    {
        ArgumentNullException.ThrowIfNull(log);
        try
        {
            options ??= new CoordinatorServerOptions();
            options.Validate();
            var logger = (ILogger?)loggerFactory?.CreateLogger<CoordinatorServer>() ?? NullLogger<CoordinatorServer>.Instance;

            // Read before the log opens: a file that does not parse fails the start without fencing anyone out.
            var credentials = options.ParticipantsFile is { } path ? DseCredentials.Load(path) : null;
            var (journal, recovered) = await CoordinatorJournal.OpenAsync(log, cancellationToken).ConfigureAwait(false);
            var coordinator = await ClusterCoordinator.OpenAsync(journal, recovered, options.ToCoordinatorOptions(loggerFactory), cancellationToken).ConfigureAwait(false);
            var state = coordinator.State;
            CoordinatorServiceMessages.Opened(logger, log.Description, state.Incarnation, recovered.Count, state.IsRecovering);
            if (credentials is not null)
            {
                CoordinatorServiceMessages.Authenticating(logger, credentials.Source, credentials.ParticipantCount, credentials.OperatorCount);
            }

            return new CoordinatorServer(log, coordinator, options, credentials, logger);
        }
        catch
        {
            await log.DisposeAsync().ConfigureAwait(false);
            throw;
        }
    }

    /// <summary>Stops the coordinator's timers, then closes the log (releasing it for the next incarnation).</summary>
    public async ValueTask DisposeAsync()
    {
        if (Interlocked.Exchange(ref _disposed, 1) != 0)
        {
            return;
        }

        try
        {
            await Coordinator.DisposeAsync().ConfigureAwait(false);
        }
        finally
        {
            await Log.DisposeAsync().ConfigureAwait(false);
            CoordinatorServiceMessages.Closed(_logger, Log.Description);
        }
    }
}
