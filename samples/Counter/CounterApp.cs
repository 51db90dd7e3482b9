using Dse.Storage;
using FASTER.core;

namespace Dse.Samples.Counter;

/// <summary>
/// The whole running example in one process: an in-process coordinator and three StateObjects (frontend, counter,
/// logging), each persisting to its own latency-injecting device.
/// </summary>
public sealed class CounterApp : IAsyncDisposable
{
    private readonly List<IAsyncDisposable> _owned = [];

    private CounterApp(InProcessCoordinator coordinator)
    {
        Coordinator = coordinator;
    }

    /// <summary>The coordinator.</summary>
    public InProcessCoordinator Coordinator { get; }

    /// <summary>The frontend clients call.</summary>
    public Frontend Frontend { get; private set; } = null!;

    /// <summary>The counter service.</summary>
    public CounterService Counter { get; private set; } = null!;

    /// <summary>The logging service.</summary>
    public LoggingService Logging { get; private set; } = null!;

    /// <summary>Starts the three services and connects them.</summary>
    public static async Task<CounterApp> StartAsync(CounterAppOptions options, CancellationToken cancellationToken = default)
    {
        ArgumentNullException.ThrowIfNull(options);
        var app = new CounterApp(new InProcessCoordinator());
        try
        {
            app.Counter = new CounterService(app.Options(2, options), await app.OpenLogAsync("counter", options, cancellationToken));
            app.Logging = new LoggingService(app.Options(3, options), await app.OpenLogAsync("logging", options, cancellationToken));
            app.Frontend = new Frontend(app.Options(1, options), await app.OpenLogAsync("frontend", options, cancellationToken), app.Counter, app.Logging);
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

    /// <inheritdoc />
    public async ValueTask DisposeAsync()
    {
        foreach (var so in new StateObject?[] { Frontend, Counter, Logging })
        {
            if (so is not null)
            {
                await so.DisposeAsync();
            }
        }

        for (int i = _owned.Count - 1; i >= 0; i--)
        {
            await _owned[i].DisposeAsync();
        }
    }

    private DseOptions Options(long id, CounterAppOptions options) => new()
    {
        ObjectId = id,
        Speculative = options.Speculative,
        GroupCommitPeriod = options.GroupCommitPeriod,
    };

    private async Task<SnapshotLog> OpenLogAsync(string name, CounterAppOptions options, CancellationToken cancellationToken)
    {
        IDevice device = options.DataDirectory is null
            ? DseDevices.CreateInMemory()
            : DseDevices.CreateLocalFile(Path.Combine(options.DataDirectory, name + ".log"));
        var log = await SnapshotLog.OpenAsync(device.WithLatency(options.WriteLatency), new SnapshotLogOptions { OwnsDevice = true }, cancellationToken: cancellationToken);
        _owned.Add(log);
        return log;
    }
}
