using System.Globalization;
using Dse.Samples.Shared;

namespace Dse.Samples.TravelReservation;

/// <summary>
/// A whole travel cluster as child processes on 127.0.0.1, each on a free port with its storage in its own folder of
/// <see cref="Directory"/>: the DSE coordinator, the reservation services (hotel, flight, ... as DSE ids 2 to 6) and
/// the frontend (id 1), which hosts the trip workflow. A service or the frontend can be killed (SIGKILL) and restarted
/// on its port and storage.
/// </summary>
public sealed class TravelCluster : IAsyncDisposable
{
    private static readonly TimeSpan s_startTimeout = TimeSpan.FromSeconds(120);

    private readonly ClusterSettings _settings;
    private readonly ChildProcess?[] _services;
    private readonly Uri[] _serviceAddresses;
    private ChildProcess? _coordinator;
    private ChildProcess? _frontend;
    private Uri? _coordinatorAddress;
    private Uri? _frontendAddress;
    private int _launches;

    private TravelCluster(string directory, ClusterSettings settings)
    {
        Directory = directory;
        _settings = settings;
        _services = new ChildProcess?[settings.Services];
        _serviceAddresses = new Uri[settings.Services];
    }

    /// <summary>The folder with every process's storage and standard error.</summary>
    public string Directory { get; }

    /// <summary>The frontend's address; it keeps it across a restart.</summary>
    public Uri FrontendAddress => _frontendAddress ?? throw new InvalidOperationException("The frontend has not started.");

    /// <summary>The reservation services' addresses, in booking order; a restarted service keeps its address.</summary>
    public IReadOnlyList<Uri> ServiceAddresses => _serviceAddresses;

    /// <summary>
    /// Starts the cluster in <paramref name="directory"/> (created if missing; it should be empty) and returns once every
    /// process is connected and serving: the coordinator, then the services at once, then the frontend.
    /// </summary>
    /// <param name="directory">Where the processes keep their storage and standard error.</param>
    /// <param name="settings">The processes' mode, group commit, and the services' count and stock.</param>
    /// <param name="cancellationToken">Stops waiting; the processes started so far are killed.</param>
    /// <exception cref="InvalidOperationException">A process failed to start; the message carries its standard error.</exception>
    public static async Task<TravelCluster> StartAsync(string directory, ClusterSettings settings, CancellationToken cancellationToken = default)
    {
        ArgumentNullException.ThrowIfNull(settings);
        ArgumentOutOfRangeException.ThrowIfNegativeOrZero(settings.Services);
        ArgumentOutOfRangeException.ThrowIfGreaterThan(settings.Services, TravelServices.Max);
        System.IO.Directory.CreateDirectory(directory);
        var cluster = new TravelCluster(directory, settings);
        try
        {
            cluster._coordinator = cluster.Launch("dse-coordinator", CoordinatorHost.Mode, ["--port", "0", "--log", Path.Combine(directory, "dse-coordinator", "coordinator.log")]);
            cluster._coordinatorAddress = await cluster._coordinator.WaitUntilReadyAsync(s_startTimeout, cancellationToken).ConfigureAwait(false);
            var ready = new Task<Uri>[settings.Services];
            for (int i = 0; i < ready.Length; i++)
            {
                cluster._services[i] = cluster.LaunchService(i, port: 0);
                ready[i] = cluster._services[i]!.WaitUntilReadyAsync(s_startTimeout, cancellationToken);
            }

            for (int i = 0; i < ready.Length; i++)
            {
                cluster._serviceAddresses[i] = await ready[i].ConfigureAwait(false);
            }

            cluster._frontend = cluster.LaunchFrontend(port: 0);
            cluster._frontendAddress = await cluster._frontend.WaitUntilReadyAsync(s_startTimeout, cancellationToken).ConfigureAwait(false);
            return cluster;
        }
        catch
        {
            await cluster.DisposeAsync().ConfigureAwait(false);
            throw;
        }
    }

    /// <summary>
    /// Kills the reservation service at <paramref name="index"/> with SIGKILL (what it had not persisted is lost), restarts
    /// it on its port and storage, and returns once it serves again (the coordinator rolled back what depended on the
    /// lost state).
    /// </summary>
    public async Task KillAndRestartServiceAsync(int index, CancellationToken cancellationToken = default)
    {
        var old = _services[index] ?? throw new InvalidOperationException($"{TravelServices.Names[index]} is not running.");
        await old.DisposeAsync().ConfigureAwait(false);
        _services[index] = LaunchService(index, _serviceAddresses[index].Port);
        await _services[index]!.WaitUntilReadyAsync(s_startTimeout, cancellationToken).ConfigureAwait(false);
    }

    /// <summary>Kills the frontend with SIGKILL, restarts it on its port and storage, and returns once it serves again (its workflows resumed).</summary>
    public async Task KillAndRestartFrontendAsync(CancellationToken cancellationToken = default)
    {
        var old = _frontend ?? throw new InvalidOperationException("The frontend is not running.");
        await old.DisposeAsync().ConfigureAwait(false);
        _frontend = LaunchFrontend(FrontendAddress.Port);
        await _frontend.WaitUntilReadyAsync(s_startTimeout, cancellationToken).ConfigureAwait(false);
    }

    /// <summary>Describes every process (state and standard error tail), for failure messages.</summary>
    public string Describe() =>
        string.Join(Environment.NewLine, new[] { _coordinator, _frontend }.Concat(_services).OfType<ChildProcess>().Select(c => c.Describe()));

    /// <inheritdoc />
    public async ValueTask DisposeAsync()
    {
        // The frontend first (it calls the services), the coordinator last (everyone reports to it).
        foreach (var child in new[] { _frontend }.Concat(_services).Append(_coordinator))
        {
            if (child is not null)
            {
                await child.DisposeAsync().ConfigureAwait(false);
            }
        }
    }

    private ChildProcess LaunchService(int index, int port)
    {
        string name = TravelServices.Names[index];
        return Launch(name, ReservationHost.Mode,
        [
            .. CommonArguments(TravelServices.IdOf(index), port, name),
            "--name", name,
            "--items", _settings.Items.ToString(CultureInfo.InvariantCulture),
            "--capacity", _settings.Capacity.ToString(CultureInfo.InvariantCulture),
        ]);
    }

    private ChildProcess LaunchFrontend(int port) => Launch("frontend", FrontendHost.Mode,
    [
        .. CommonArguments(TravelServices.FrontendId, port, "frontend"),
        "--services", string.Join(',', _serviceAddresses.Select(a => a.ToString().TrimEnd('/'))),
    ]);

    /// <summary>What every DSE process gets: its id, port, storage folder, the coordinator, and the run's mode.</summary>
    private string[] CommonArguments(long id, int port, string name) =>
    [
        "--id", id.ToString(CultureInfo.InvariantCulture),
        "--port", port.ToString(CultureInfo.InvariantCulture),
        "--data", Path.Combine(Directory, name),
        "--coordinator", _coordinatorAddress!.ToString().TrimEnd('/'),
        "--group-commit-ms", ((long)_settings.GroupCommit.TotalMilliseconds).ToString(CultureInfo.InvariantCulture),
        "--speculative", _settings.Speculative ? "true" : "false",
    ];

    private ChildProcess Launch(string name, string mode, IEnumerable<string> arguments)
    {
        // Each start of a process gets its own standard error file, so a restart does not overwrite the crash's.
        int launch = Interlocked.Increment(ref _launches);
        return ChildProcess.Start(name, mode, arguments, Path.Combine(Directory, "logs", $"{name}.{launch}.stderr"));
    }
}
