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

    private CounterApp(ClusterCoordinator coordinator, CounterAppOptions options)
    {
        Coordinator = coordinator;
        _options = options;
    }

    /// <summary>The coordinator.</summary>
    public ClusterCoordinator Coordinator { get; }

    /// <summary>The frontend clients call.</summary>
    public Frontend Frontend { get; private set; } = null!;

    /// <summary>The counter service's current incarnation.</summary>
    public CounterService Counter => _counter;

    /// <summary>How many times the counter service was restarted.</summary>
    public int CounterRestarts { get; private set; }

    /// <summary>The logging service.</summary>
    public LoggingService Logging { get; private set; } = null!;

    /// <summary>Starts the three services and connects them.</summary>
    public static async Task<CounterApp> StartAsync(CounterAppOptions options, CancellationToken cancellationToken = default)
    {
        ArgumentNullException.ThrowIfNull(options);
        var app = new CounterApp(new ClusterCoordinator(), options);
        try
        {
            app._counter = new CounterService(app.Options(2), await app.OpenLogAsync("counter", cancellationToken));
            app.Logging = new LoggingService(app.Options(3), await app.OpenLogAsync("logging", cancellationToken));
            app.Frontend = new Frontend(app.Options(1), await app.OpenLogAsync("frontend", cancellationToken), () => app._counter, () => app.Logging);
            await app.Counter.ConnectAsync(app.Coordinator, cancellationToken);
            await app.Logging.ConnectAsync(app.Coordinator, cancellationToken);
            await app.Frontend.ConnectAsync(app.Coordinator, cancellationToken);
            return app;
        }
        catch
        {
            await app.DisposeAsync();
            throw;
        }
    }

    /// <summary>
    /// Crashes the counter service: every write not yet on its device is lost (a crash cut), the instance stops, and a
    /// new incarnation starts on the same storage and connects, which the coordinator treats as a failure.
    /// </summary>
    public async Task CrashAndRestartCounterAsync(CancellationToken cancellationToken = default)
    {
        _devices["counter"].CutNow();
        await _counter.DisposeAsync();
        await _logs["counter"].DisposeAsync();
        var restarted = new CounterService(Options(2), await OpenLogAsync("counter", cancellationToken));
        await restarted.ConnectAsync(Coordinator, cancellationToken);
        _counter = restarted;
        CounterRestarts++;
    }

    /// <inheritdoc />
    public async ValueTask DisposeAsync()
    {
        foreach (var so in new StateObject?[] { Frontend, _counter, Logging })
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
