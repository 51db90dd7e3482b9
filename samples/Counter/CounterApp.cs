using Dse.Storage;
using FASTER.core;

namespace Dse.Samples.Counter;

/// <summary>
/// The whole running example in one process: an in-process coordinator and three StateObjects (frontend, counter,
/// logging), each persisting to its own latency-injecting device. The counter service can be crashed and restarted
/// on its storage while requests are in flight.
/// </summary>
public sealed class CounterApp : IAsyncDisposable
{
    private readonly Dictionary<string, SnapshotLog> _logs = [];
    private readonly Dictionary<string, FaultInjectingDevice> _devices = [];
    private readonly Dictionary<string, InMemoryStorage> _memory = [];
    private readonly CounterAppOptions _options;
    private volatile CounterService _counter = null!;
    private volatile LoggingService _logging = null!;
    private volatile Frontend _frontend = null!;

    private CounterApp(ClusterCoordinator coordinator, CounterAppOptions options)
    {
        Coordinator = coordinator;
        _options = options;
    }

    /// <summary>The coordinator.</summary>
    public ClusterCoordinator Coordinator { get; }

    /// <summary>The frontend's current incarnation, which clients call.</summary>
    public Frontend Frontend => _frontend;

    /// <summary>The counter service's current incarnation.</summary>
    public CounterService Counter => _counter;

    /// <summary>How many times a service was crashed and restarted.</summary>
    public int Restarts { get; private set; }

    /// <summary>The logging service's current incarnation.</summary>
    public LoggingService Logging => _logging;

    /// <summary>Starts the three services and connects them.</summary>
    public static async Task<CounterApp> StartAsync(CounterAppOptions options, CancellationToken cancellationToken = default)
    {
        ArgumentNullException.ThrowIfNull(options);
        // Predetermined membership: after a whole-app restart, the services resume from one consistent cut.
        var app = new CounterApp(new ClusterCoordinator(new ClusterCoordinatorOptions { ExpectedParticipants = [1, 2, 3] }), options);
        try
        {
            app._counter = await app.CreateAsync("counter", cancellationToken) as CounterService ?? throw new InvalidOperationException();
            app._logging = await app.CreateAsync("logging", cancellationToken) as LoggingService ?? throw new InvalidOperationException();
            app._frontend = await app.CreateAsync("frontend", cancellationToken) as Frontend ?? throw new InvalidOperationException();
            // Together: a cold start answers once every expected service has listed its storage.
            await Task.WhenAll(
                app._counter.ConnectAsync(app.Coordinator, cancellationToken).AsTask(),
                app._logging.ConnectAsync(app.Coordinator, cancellationToken).AsTask(),
                app._frontend.ConnectAsync(app.Coordinator, cancellationToken).AsTask());
            return app;
        }
        catch
        {
            await app.DisposeAsync();
            throw;
        }
    }

    /// <summary>
    /// Crashes one service (<c>frontend</c>, <c>counter</c> or <c>logging</c>): the instance stops, every write not yet
    /// on its device is lost (a crash cut), and a new incarnation starts on the same storage and connects, which the
    /// coordinator treats as a failure. Requests in flight through the old instance fail with a DSE exception.
    /// </summary>
    /// <exception cref="ArgumentException">The service name is not one of the three.</exception>
    public async Task CrashAndRestartAsync(string service, CancellationToken cancellationToken = default)
    {
        StateObject old = service switch
        {
            "frontend" => _frontend,
            "counter" => _counter,
            "logging" => _logging,
            _ => throw new ArgumentException($"Unknown service '{service}'; expected frontend, counter or logging.", nameof(service)),
        };
        // Stop the instance first, then cut its storage. A crashed process reports nothing; an instance still running
        // after the cut could report a persist the cut dropped (the fault device acknowledges dropped writes), and the
        // coordinator would then commit a version that no longer exists. Writes that complete before the cut are
        // durable, as on a real disk.
        await old.DisposeAsync();
        _devices[service].CutNow();
        await _logs[service].DisposeAsync();
        var restarted = await CreateAsync(service, cancellationToken);
        await restarted.ConnectAsync(Coordinator, cancellationToken);
        switch (restarted)
        {
            case Frontend f:
                _frontend = f;
                break;
            case CounterService c:
                _counter = c;
                break;
            case LoggingService l:
                _logging = l;
                break;
        }

        Restarts++;
    }

    /// <summary>Crashes and restarts the counter service; see <see cref="CrashAndRestartAsync"/>.</summary>
    public Task CrashAndRestartCounterAsync(CancellationToken cancellationToken = default) => CrashAndRestartAsync("counter", cancellationToken);

    /// <inheritdoc />
    public async ValueTask DisposeAsync()
    {
        foreach (var so in new StateObject?[] { _frontend, _counter, _logging })
        {
            if (so is not null)
            {
                await so.DisposeAsync();
            }
        }

        foreach (var log in _logs.Values)
        {
            await log.DisposeAsync();
        }
    }

    private async Task<StateObject> CreateAsync(string service, CancellationToken cancellationToken)
    {
        var log = await OpenLogAsync(service, cancellationToken);
        return service switch
        {
            "frontend" => new Frontend(Options(1), log, () => _counter, () => _logging),
            "counter" => new CounterService(Options(2), log),
            _ => new LoggingService(Options(3), log),
        };
    }

    private DseOptions Options(long id) => new()
    {
        ObjectId = id,
        Speculative = _options.Speculative,
        GroupCommitPeriod = _options.GroupCommitPeriod,
    };

    private async Task<SnapshotLog> OpenLogAsync(string name, CancellationToken cancellationToken)
    {
        IDevice device;
        if (_options.DataDirectory is null)
        {
            // The memory outlives a crashed device, like a disk outlives a crashed machine.
            if (!_memory.TryGetValue(name, out var memory))
            {
                _memory[name] = memory = new InMemoryStorage();
            }

            device = DseDevices.CreateInMemory(memory);
        }
        else
        {
            device = DseDevices.CreateLocalFile(Path.Combine(_options.DataDirectory, name + ".log"));
        }

        // Writes pass the fault device (where a crash cuts them) only after their latency, as if still in flight.
        var faults = device.WithFaults();
        var log = await SnapshotLog.OpenAsync(faults.WithLatency(_options.WriteLatency), new SnapshotLogOptions { OwnsDevice = true }, cancellationToken: cancellationToken);
        _devices[name] = faults;
        _logs[name] = log;
        return log;
    }
}
