using System.Globalization;
using System.Net;
using System.Net.Sockets;
using Dse.Testing;

namespace Dse.Coordinator.Tests.Infrastructure;

/// <summary>
/// A coordinator host process and participant processes (tests/Dse.Coordinator.Participant) on loopback, each of which
/// can be killed with SIGKILL and restarted on its own storage. The cluster routes every <c>SEND</c> a participant
/// prints to the addressed participant's standard input (dropping it while that one is down) and records what the test
/// checks: what was sent, exposed, discarded, each participant's committed version, and the final states.
/// </summary>
/// <remarks>
/// Waits are on conditions over what the processes printed, with a generous guard (<see cref="WaitTimeout"/>) that
/// only turns a hang into a failure naming what was awaited. A process that exits without the test killing it fails
/// the next wait with its standard error.
/// </remarks>
public sealed class CrashTestCluster : IAsyncDisposable
{
    public const string ListeningAnnouncement = "DSE coordinator listening on ";
    public static readonly TimeSpan WaitTimeout = TimeSpan.FromSeconds(60);

    private readonly string _hostPath;
    private readonly string _participantPath;
    private readonly int _port;
    private readonly int _seed;
    private readonly long[] _ids;

    // Everything below is guarded by _lock; the output pumps of all processes update it.
    private readonly Lock _lock = new();
    private readonly List<LineChildProcess> _processes = [];
    private readonly Dictionary<long, ParticipantRecord> _participants = [];
    private readonly List<string> _protocolErrors = [];
    private TaskCompletionSource _changed = NewSignal();
    private LineChildProcess? _coordinator;
    private bool _coordinatorListening;
    private int _coordinatorStarts;

    private CrashTestCluster(string directory, int port, int seed, long[] ids)
    {
        Directory = directory;
        _port = port;
        _seed = seed;
        _ids = ids;
        _hostPath = BuiltProgram.Locate("src/Coordinator/Dse.Coordinator.Host", "Dse.Coordinator.Host.dll");
        _participantPath = BuiltProgram.Locate("tests/Dse.Coordinator.Participant", "Dse.Coordinator.Participant.dll");
        foreach (long id in ids)
        {
            _participants[id] = new ParticipantRecord();
        }
    }

    /// <summary>The temp directory with the coordinator log, the participants' storage and every process's standard error.</summary>
    public string Directory { get; }

    /// <summary>The coordinator's log file.</summary>
    public string CoordinatorLogPath => Path.Combine(Directory, "coordinator.log");

    /// <summary>The coordinator's address; the same for every incarnation.</summary>
    public Uri CoordinatorAddress => new($"http://127.0.0.1:{_port}");

    /// <summary>The participant ids.</summary>
    public IReadOnlyList<long> Ids => _ids;

    /// <summary>How often the coordinator host was started.</summary>
    public int CoordinatorStarts
    {
        get
        {
            lock (_lock)
            {
                return _coordinatorStarts;
            }
        }
    }

    /// <summary>Creates the cluster in a fresh temp directory, on a free loopback port; nothing runs yet.</summary>
    public static CrashTestCluster Create(int seed, params long[] ids)
    {
        string directory = System.IO.Directory.CreateTempSubdirectory("dse-coordinator-crash-").FullName;
        return new CrashTestCluster(directory, FreePort(), seed, ids);
    }

    /// <summary>Starts the coordinator host (on the same port and log every time) and waits for its announcement.</summary>
    public async Task StartCoordinatorAsync()
    {
        int start;
        lock (_lock)
        {
            start = ++_coordinatorStarts;
            _coordinatorListening = false;
        }

        string[] arguments =
        [
            "--port", _port.ToString(CultureInfo.InvariantCulture),
            "--log", "file:" + CoordinatorLogPath,

            // Removal is not under test here; a participant stalled by a loaded machine must not be removed.
            "--heartbeat-timeout", "60s",
        ];
        var host = LineChildProcess.Start($"coordinator#{start}", _hostPath, arguments, Path.Combine(Directory, $"coordinator-{start}.stderr"), OnCoordinatorLineAsync, _ => Signal());
        lock (_lock)
        {
            _processes.Add(host);
            _coordinator = host;
        }

        await WaitUntilAsync(() => _coordinatorListening, $"coordinator#{start} to announce it listens on port {_port}");
    }

    /// <summary>Kills the coordinator host with SIGKILL; the participants keep running.</summary>
    public async Task KillCoordinatorAsync()
    {
        LineChildProcess host;
        lock (_lock)
        {
            host = _coordinator ?? throw new InvalidOperationException("The coordinator is not running.");
            _coordinator = null;
        }

        await host.KillHardAsync();
    }

    /// <summary>
    /// Starts participant <paramref name="id"/> on its directory and waits until it is connected (READY); returns the
    /// world-line it connected in.
    /// </summary>
    public async Task<long> StartParticipantAsync(long id)
    {
        var record = _participants[id];
        int incarnation;
        lock (_lock)
        {
            incarnation = ++record.Starts;
            record.Ready = false;
            record.Committed = -1;
            record.WorldLine = -1;
            record.Version = -1;
        }

        string[] arguments =
        [
            "--id", id.ToString(CultureInfo.InvariantCulture),
            "--coordinator", CoordinatorAddress.ToString(),
            "--dir", Path.Combine(Directory, $"participant-{id}"),
            "--peers", string.Join(',', _ids),
            "--seed", (_seed + (id * 1000) + incarnation).ToString(CultureInfo.InvariantCulture),
        ];
        var child = LineChildProcess.Start($"participant {id}#{incarnation}", _participantPath, arguments, Path.Combine(Directory, $"participant-{id}-{incarnation}.stderr"),
            (child, line) => OnParticipantLineAsync(record, child, line), _ => Signal());
        lock (_lock)
        {
            _processes.Add(child);
            record.Process = child;
        }

        await WaitUntilAsync(() => record.Ready, $"participant {id}#{incarnation} to connect (READY)");
        lock (_lock)
        {
            return record.WorldLine;
        }
    }

    /// <summary>
    /// Kills participant <paramref name="id"/> with SIGKILL, then waits until every line it printed before dying was
    /// handled (what it exposed counts; messages it sent are still routed, as a network would deliver them late).
    /// </summary>
    public async Task KillParticipantAsync(long id)
    {
        var record = _participants[id];
        LineChildProcess child;
        lock (_lock)
        {
            child = record.Process ?? throw new InvalidOperationException($"Participant {id} is not running.");
            record.Ready = false;
        }

        await child.KillHardAsync();
        await child.OutputCompleted.WaitAsync(WaitTimeout);
    }

    /// <summary>The committed version participant <paramref name="id"/>'s current incarnation last printed (-1 before any).</summary>
    public long Committed(long id)
    {
        lock (_lock)
        {
            return _participants[id].Committed;
        }
    }

    /// <summary>Every participant's committed version, as last printed.</summary>
    public Dictionary<long, long> CommittedVersions()
    {
        lock (_lock)
        {
            return _ids.ToDictionary(id => id, id => _participants[id].Committed);
        }
    }

    /// <summary>Every participant's current version, as last printed with its committed version.</summary>
    public Dictionary<long, long> CurrentVersions()
    {
        lock (_lock)
        {
            return _ids.ToDictionary(id => id, id => _participants[id].Version);
        }
    }

    /// <summary>Waits until every participant is in <paramref name="worldLine"/> or later (applied the decision that made it).</summary>
    public Task WaitForWorldLineAsync(long worldLine, string phase) =>
        WaitUntilAsync(
            () => _ids.All(id => _participants[id].WorldLine >= worldLine),
            $"every participant to reach world-line {worldLine} ({phase})");

    /// <summary>How many events participant <paramref name="id"/> sent, over all its incarnations.</summary>
    public int Sent(long id)
    {
        lock (_lock)
        {
            return _participants[id].SentEvents.Count;
        }
    }

    /// <summary>How many barriers participant <paramref name="id"/> passed and exposed, over all its incarnations.</summary>
    public int Exposes(long id)
    {
        lock (_lock)
        {
            return _participants[id].Exposes;
        }
    }

    /// <summary>Waits until every participant's committed version is above <paramref name="floors"/> (the boundary moved for all).</summary>
    public Task WaitForCommitsAboveAsync(IReadOnlyDictionary<long, long> floors, string phase) =>
        WaitUntilAsync(
            () => _ids.All(id => _participants[id].Committed > floors[id]),
            $"every participant's committed version to pass {Format(floors)} ({phase})");

    /// <summary>
    /// Quiesces the cluster: QUIET everyone (after QUIETED nobody sends again), SETTLE everyone (all routed messages
    /// applied, then the whole state recoverable), then DUMP everyone's final state.
    /// </summary>
    public async Task QuiesceAsync()
    {
        await SendToAllAsync("QUIET");
        await WaitUntilAsync(() => _ids.All(id => _participants[id].Quieted), "every participant to stop sending (QUIETED)");

        // Every SEND was printed before QUIETED and is routed by now, so SETTLE reaches each participant after them.
        await SendToAllAsync("SETTLE");
        await WaitUntilAsync(() => _ids.All(id => _participants[id].Settled), "every participant's state to be recoverable (SETTLED)");
        await SendToAllAsync("DUMP");
        await WaitUntilAsync(() => _ids.All(id => _participants[id].Final is not null), "every participant's final state (DUMP)");
    }

    /// <summary>The final state of participant <paramref name="id"/> after <see cref="QuiesceAsync"/>.</summary>
    public ParticipantDump FinalState(long id)
    {
        lock (_lock)
        {
            return _participants[id].Final ?? throw new InvalidOperationException($"Participant {id} was not dumped.");
        }
    }

    /// <summary>What participant <paramref name="id"/> showed the outside world through barriers, over all its incarnations.</summary>
    public IReadOnlySet<string> Exposed(long id)
    {
        lock (_lock)
        {
            return new HashSet<string>(_participants[id].Exposed, StringComparer.Ordinal);
        }
    }

    /// <summary>Counters over the whole run, for assertions and the summary line.</summary>
    public RunCounters Counters()
    {
        lock (_lock)
        {
            var all = _participants.Values;
            return new RunCounters(
                Sent: all.Sum(p => p.SentEvents.Count),
                Routed: all.Sum(p => p.Routed),
                Dropped: all.Sum(p => p.Dropped),
                Discarded: all.Sum(p => p.Discarded),
                Exposes: all.Sum(p => p.Exposes),
                Withheld: all.Sum(p => p.Withheld),
                ParticipantStarts: all.Sum(p => p.Starts),
                CoordinatorStarts: _coordinatorStarts);
        }
    }

    /// <summary>The events participant <paramref name="id"/> generated (SEND), over all its incarnations.</summary>
    public IReadOnlySet<string> SentEvents(long id)
    {
        lock (_lock)
        {
            return new HashSet<string>(_participants[id].SentEvents, StringComparer.Ordinal);
        }
    }

    /// <summary>Every process's state and standard error tail, and any line the cluster could not understand.</summary>
    public string Describe()
    {
        lock (_lock)
        {
            var lines = new List<string> { $"cluster directory {Directory} (kept), coordinator port {_port}, seed {_seed}" };
            lines.AddRange(_ids.Select(id => $"participant {id}: committed {_participants[id].Committed}, starts {_participants[id].Starts}, sent {_participants[id].SentEvents.Count}"));
            lines.AddRange(_protocolErrors.Take(10).Select(e => "protocol error: " + e));
            lines.AddRange(_processes.Select(p => p.Describe()));
            return string.Join('\n', lines);
        }
    }

    /// <summary>Waits until <paramref name="condition"/> holds (evaluated under the cluster's lock after each change).</summary>
    /// <exception cref="TimeoutException">It did not hold within <see cref="WaitTimeout"/>; the message says what was awaited.</exception>
    /// <exception cref="InvalidOperationException">A process exited on its own, or printed a line the cluster does not understand.</exception>
    public async Task WaitUntilAsync(Func<bool> condition, string what)
    {
        using var timeout = new CancellationTokenSource(WaitTimeout);
        while (true)
        {
            Task changed;
            lock (_lock)
            {
                changed = _changed.Task;
                ThrowIfBroken();
                if (condition())
                {
                    return;
                }
            }

            try
            {
                await changed.WaitAsync(timeout.Token);
            }
            catch (OperationCanceledException) when (timeout.IsCancellationRequested)
            {
                throw new TimeoutException($"Waited {WaitTimeout.TotalSeconds:0} s for {what}.\n{Describe()}");
            }
        }
    }

    /// <summary>Kills every process still running; the directory is deleted only if <paramref name="keepDirectory"/> is false.</summary>
    public async ValueTask DisposeAsync(bool keepDirectory)
    {
        LineChildProcess[] processes;
        lock (_lock)
        {
            processes = [.. _processes];
        }

        foreach (var process in processes)
        {
            await process.DisposeAsync();
        }

        if (!keepDirectory)
        {
            try
            {
                System.IO.Directory.Delete(Directory, recursive: true);
            }
            catch (IOException)
            {
                // Best effort: a temp directory left behind is harmless.
            }
        }
    }

    public ValueTask DisposeAsync() => DisposeAsync(keepDirectory: false);

    private async Task SendToAllAsync(string command)
    {
        foreach (long id in _ids)
        {
            LineChildProcess? child;
            lock (_lock)
            {
                child = _participants[id].Process;
            }

            if (child is null || !await child.WriteLineAsync(command))
            {
                throw new InvalidOperationException($"Could not send {command} to participant {id}.\n{Describe()}");
            }
        }
    }

    private Task OnCoordinatorLineAsync(LineChildProcess host, string line)
    {
        if (line.StartsWith(ListeningAnnouncement, StringComparison.Ordinal))
        {
            lock (_lock)
            {
                if (host == _coordinator)
                {
                    _coordinatorListening = true;
                }
            }

            Signal();
        }

        return Task.CompletedTask;
    }

    private async Task OnParticipantLineAsync(ParticipantRecord record, LineChildProcess child, string line)
    {
        string[] parts = line.Split(' ');
        LineChildProcess? routeTo = null;
        string? routed = null;
        lock (_lock)
        {
            try
            {
                Apply(current: record.Process == child);
            }
            catch (FormatException)
            {
                _protocolErrors.Add($"{child.Name}: '{Shorten(line)}' (a number does not parse)");
            }
        }

        if (routeTo is not null)
        {
            bool delivered = await routeTo.WriteLineAsync(routed!);
            lock (_lock)
            {
                if (delivered)
                {
                    record.Routed++;
                }
                else
                {
                    record.Dropped++;
                }
            }
        }

        Signal();

        // Called under the lock; current: the line comes from the participant's current incarnation.
        void Apply(bool current)
        {
            switch (parts)
            {
                case ["READY", _, _, var worldLine, ..] when current:
                    record.WorldLine = long.Parse(worldLine, CultureInfo.InvariantCulture);
                    record.Ready = true;
                    break;
                case ["SEND", var toText, var eventName, var header]
                    when long.TryParse(toText, NumberStyles.None, CultureInfo.InvariantCulture, out long to) && _participants.TryGetValue(to, out var target):
                    record.SentEvents.Add(eventName);
                    if (target.Ready && target.Process is { HasExited: false } process)
                    {
                        routeTo = process;
                        routed = $"RECV {eventName} {header}";
                    }
                    else
                    {
                        record.Dropped++;
                    }

                    break;
                case ["DISCARD", _]:
                    record.Discarded++;
                    break;
                case ["EXPOSED", ..]:
                    // What an outside observer saw, from whichever incarnation printed it.
                    record.Exposes++;
                    record.Exposed.UnionWith(line["EXPOSED ".Length..].Split(',', StringSplitOptions.RemoveEmptyEntries));
                    break;
                case ["WITHHELD", _]:
                    record.Withheld++;
                    break;
                case ["STATUS", var committed, var worldLine, var version] when current:
                    record.Committed = long.Parse(committed, CultureInfo.InvariantCulture);
                    record.WorldLine = long.Parse(worldLine, CultureInfo.InvariantCulture);
                    record.Version = long.Parse(version, CultureInfo.InvariantCulture);
                    break;
                case ["QUIETED"] when current:
                    record.Quieted = true;
                    break;
                case ["SETTLED"] when current:
                    record.Settled = true;
                    break;
                case ["STATE", ..] when current:
                    record.DumpedEvents = line.Length > "STATE ".Length ? line["STATE ".Length..].Split(',') : [];
                    break;
                case ["COMMITTED", var committed] when current:
                    record.DumpedCommitted = long.Parse(committed, CultureInfo.InvariantCulture);
                    break;
                case ["WORLDLINE", var worldLine] when current:
                    record.DumpedWorldLine = long.Parse(worldLine, CultureInfo.InvariantCulture);
                    break;
                case ["VERSION", var version] when current:
                    record.Final = new ParticipantDump(record.DumpedEvents, record.DumpedCommitted, record.DumpedWorldLine, long.Parse(version, CultureInfo.InvariantCulture));
                    break;
                case ["STATUS" or "READY" or "QUIETED" or "SETTLED" or "STATE" or "COMMITTED" or "WORLDLINE" or "VERSION", ..] when !current:
                    // From an incarnation the test killed meanwhile: no longer the participant's state.
                    break;
                default:
                    _protocolErrors.Add($"{child.Name}: '{Shorten(line)}'");
                    break;
            }
        }
    }

    private static string Shorten(string line) => line.Length > 200 ? line[..200] + "..." : line;

    private void ThrowIfBroken()
    {
        if (_protocolErrors.Count > 0)
        {
            throw new InvalidOperationException($"A participant printed lines the test does not understand.\n{Describe()}");
        }

        foreach (var process in _processes)
        {
            if (process.HasExited && !process.KilledByTest)
            {
                throw new InvalidOperationException($"{process.Name} exited without being killed.\n{Describe()}");
            }
        }
    }

    private void Signal() => Interlocked.Exchange(ref _changed, NewSignal()).TrySetResult();

    private static TaskCompletionSource NewSignal() => new(TaskCreationOptions.RunContinuationsAsynchronously);

    private static string Format(IReadOnlyDictionary<long, long> versions) =>
        string.Join(", ", versions.OrderBy(v => v.Key).Select(v => $"{v.Key}:{v.Value}"));

    /// <summary>
    /// A free port below the ephemeral ranges (Linux 32768 and up, Windows and macOS 49152 and up): while the
    /// coordinator is down, no outgoing connection and no listener on port 0, of this test or another process, can be
    /// handed the port it restarts on.
    /// </summary>
    private static int FreePort()
    {
        for (int attempt = 0; attempt < 100; attempt++)
        {
            int port = Random.Shared.Next(20_000, 32_000);
            try
            {
                using var probe = new TcpListener(IPAddress.Loopback, port);
                probe.Start();
                return port;
            }
            catch (SocketException)
            {
                // Taken: try another.
            }
        }

        using var listener = new TcpListener(IPAddress.Loopback, 0);
        listener.Start();
        return ((IPEndPoint)listener.LocalEndpoint).Port;
    }

    /// <summary>What the cluster knows about one participant id, over all its incarnations. Guarded by the cluster's lock.</summary>
    private sealed class ParticipantRecord
    {
        public LineChildProcess? Process { get; set; }

        public int Starts { get; set; }

        public bool Ready { get; set; }

        public long Committed { get; set; } = -1;

        public long WorldLine { get; set; } = -1;

        public long Version { get; set; } = -1;

        public HashSet<string> SentEvents { get; } = new(StringComparer.Ordinal);

        public HashSet<string> Exposed { get; } = new(StringComparer.Ordinal);

        public int Routed { get; set; }

        public int Dropped { get; set; }

        public int Discarded { get; set; }

        public int Exposes { get; set; }

        public int Withheld { get; set; }

        public bool Quieted { get; set; }

        public bool Settled { get; set; }

        public string[] DumpedEvents { get; set; } = [];

        public long DumpedCommitted { get; set; }

        public long DumpedWorldLine { get; set; }

        public ParticipantDump? Final { get; set; }
    }
}
