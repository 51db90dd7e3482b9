using Microsoft.Extensions.Time.Testing;

namespace Dse.Tests;

/// <summary>
/// One seeded, deterministic run: StateObjects exchanging messages through actions and sthreads, random persists,
/// random durability, crashes (losing what was not durable) and restarts, random barriers. Everything runs on one
/// flow against the in-process coordinator with background tasks off, so a seed always replays the same run.
/// </summary>
/// <remarks>
/// The simulation keeps its own ground truth, independent of the runtime: every event (a send, a consumption, a detach,
/// a merge, a reply) has an owner and the events it causally needs. Each StateObject's state is its history of events.
/// Checks: (1) at the end, every event in a surviving history has all it needs in surviving histories; (2) nothing
/// a barrier exposed is ever lost, and no restore goes below the committed version; (3) a message whose sender state
/// was lost is never part of surviving state; (4) once failures stop, the boundary covers everything persisted.
/// </remarks>
internal sealed class Simulation
{
    private readonly Random _rng;
    private readonly int _seed;
    private readonly CoordinatorProxy _coordinator;
    private readonly SimJournal? _journal;
    private readonly Node[] _nodes;
    private readonly List<Message> _inFlight = [];
    private readonly List<Message> _allMessages = [];
    private readonly List<SimSthread> _sthreads = [];
    private readonly Dictionary<long, Event> _events = [];
    private readonly HashSet<long> _exposed = [];
    private readonly Dictionary<long, long> _maxExposedVersion = [];
    private readonly Dictionary<long, long> _maxCommitted = [];
    private readonly int _steps;
    private readonly int _failuresStopAt;
    private long _nextEventId = 1;
    private int _step;

    private readonly bool _onDevices;
    private readonly FakeTimeProvider _clock = new();

    /// <param name="seed">The seed; the same seed replays the same run.</param>
    /// <param name="onDevices">Persist through SnapshotLogs on fault-injecting devices instead of in-memory stores.</param>
    /// <param name="coordinatorCrashes">
    /// Run a journaled coordinator and crash it at random points: between steps, and in the middle of a journal append
    /// (which then may or may not have become durable). Each restart recovers from the journal and the resyncs.
    /// </param>
    public Simulation(int seed, bool onDevices = false, bool coordinatorCrashes = false)
    {
        _seed = seed;
        _onDevices = onDevices;
        _rng = new Random(seed);
        if (coordinatorCrashes)
        {
            _journal = new SimJournal(new Random(seed ^ 0x5eed));
        }

        _coordinator = new CoordinatorProxy(_journal is null ? new ClusterCoordinator() : null);
        _nodes = new Node[_rng.Next(2, 7)];

        _steps = _rng.Next(150, 500);
        _failuresStopAt = _steps * 3 / 4;
    }

    public SimulationStats Stats { get; } = new();

    /// <summary>A digest of the final histories, equal for two runs of the same seed.</summary>
    public string Fingerprint { get; private set; } = string.Empty;

    public async Task RunAsync()
    {
        if (_journal is not null)
        {
            _coordinator.Current = await ClusterCoordinator.OpenAsync(_journal, []);
        }

        for (int i = 0; i < _nodes.Length; i++)
        {
            IVersionStore store = _onDevices ? await DeviceVersionStore.CreateAsync() : new MemoryVersionStore { AutoDurable = false };
            _nodes[i] = new Node(i + 1, store);
            await StartAsync(_nodes[i]);
        }

        for (_step = 0; _step < _steps; _step++)
        {
            _journal?.Failing = _step < _failuresStopAt;
            await RestartDueNodesAsync();
            try
            {
                await StepAsync();
            }
            catch (DseCoordinatorException ex) when (ex.Code == CoordinatorErrorCode.Unavailable && _coordinator.Current.Fault is not null)
            {
                // The coordinator crashed in the middle of a journal append this step made.
            }

            await RestartCoordinatorIfDownAsync();
            CheckCommittedMonotonic();
        }

        await QuiesceAsync();
        CheckFinalSafety();
        Stats.TornWrites = _nodes.Sum(n => (n.Store as DeviceVersionStore)?.TornWrites ?? 0);
        Fingerprint = string.Join("|", _nodes.Select(n => $"{n.Id}:{n.Instance!.WorldLine}:{n.Instance.CurrentVersion}:{string.Join(",", n.Instance.History)}"));
    }

    private async Task StepAsync()
    {
        int roll = _rng.Next(100);
        if (roll < 22)
        {
            await SendAsync();
        }
        else if (roll < 46)
        {
            await DeliverAsync(_rng.Next(Math.Max(1, _inFlight.Count)));
        }
        else if (roll < 58)
        {
            await WithAliveAsync(n => n.Instance!.AdvanceVersionAsync().AsTask());
        }
        else if (roll < 71)
        {
            var node = _nodes[_rng.Next(_nodes.Length)];
            await node.Store.CompleteOldestAsync(_rng.Next(1, 4));
        }
        else if (roll < 81)
        {
            await WithAliveAsync(n => n.Instance!.RefreshAsync().AsTask());
        }
        else if (roll < 85)
        {
            Detach();
        }
        else if (roll < 90)
        {
            await SthreadCallAsync();
        }
        else if (roll < 95)
        {
            Barrier();
        }
        else if (roll < 97)
        {
            await MergeAsync();
        }
        else if (roll < 98)
        {
            await ForgeAsync();
        }
        else if (_journal is not null && _step < _failuresStopAt && _rng.Next(3) == 0)
        {
            await RestartCoordinatorAsync();
        }
        else if (_step < _failuresStopAt && _rng.Next(2) == 0)
        {
            await CrashAsync();
        }
    }

    private Node? PickAlive()
    {
        var alive = _nodes.Where(n => n.Instance is not null).ToList();
        return alive.Count == 0 ? null : alive[_rng.Next(alive.Count)];
    }

    private async Task WithAliveAsync(Func<Node, Task> action)
    {
        var node = PickAlive();
        if (node is not null)
        {
            await action(node);
        }
    }

    private void Post(Message message)
    {
        _inFlight.Add(message);
        _allMessages.Add(message);
    }

    private long NewEvent(long owner, IEnumerable<long> needs)
    {
        long id = _nextEventId++;
        _events[id] = new Event(id, owner, [.. needs]);
        return id;
    }

    private async Task ForgeAsync()
    {
        var to = PickAlive();
        if (to is null)
        {
            return;
        }

        if (await SimulationForgery.DeliverAsync(to.Instance!, [.. _nodes.Select(n => n.Id)], _rng, Fail))
        {
            to.Instance!.Record(NewEvent(to.Id, []));
            to.Instance.EndAction();
        }

        Stats.Forged++;
    }

    private async Task SendAsync()
    {
        var from = PickAlive();
        if (from is null)
        {
            return;
        }

        var to = _nodes[_rng.Next(_nodes.Length)];
        var so = from.Instance!;
        Assert.True(so.TryStartLocalAction(), Fail("a local action could not start between steps"));
        long sent = NewEvent(from.Id, []);
        so.Record(sent);
        var header = so.EndAction();
        var sthread = _rng.Next(4) == 0 ? PickSthread() : null;
        Post(new Message(header, to.Id, [sent]) { ToSthread = sthread });
        Stats.Sent++;
    }

    private async Task DeliverAsync(int index)
    {
        if (index >= _inFlight.Count)
        {
            return;
        }

        var message = _inFlight[index];
        if (message.ToSthread is { } target)
        {
            DeliverToSthread(index, message, target);
            return;
        }

        var node = _nodes[message.To - 1];
        if (node.Instance is null)
        {
            return;   // the receiver is down; the message waits in the network
        }

        var so = node.Instance;
        var status = await StartAsync(so, message.Header);
        switch (status)
        {
            case StartActionStatus.Accepted:
                _inFlight.RemoveAt(index);
                long consumed = NewEvent(node.Id, message.Needs);
                so.Record(consumed);
                message.ConsumedAs = consumed;
                Stats.Accepted++;
                if (_rng.Next(3) == 0)
                {
                    long reply = NewEvent(node.Id, []);
                    so.Record(reply);
                    var header = so.EndAction();
                    Post(new Message(header, _nodes[_rng.Next(_nodes.Length)].Id, [reply]));
                }
                else
                {
                    so.EndAction();
                }

                break;
            case StartActionStatus.Discard:
                _inFlight.RemoveAt(index);
                message.Discarded = true;
                Stats.Discarded++;
                break;
            case StartActionStatus.WorldLineBehind:
                await so.RefreshAsync();
                Stats.Delayed++;
                break;
            default:
                throw new InvalidOperationException(Fail($"unexpected start status {status}"));
        }
    }

    private void DeliverToSthread(int index, Message message, SimSthread target)
    {
        if (target.Dead)
        {
            _inFlight.RemoveAt(index);
            message.Discarded = true;
            return;
        }

        try
        {
            switch (target.Sthread.TryReceive(message.Header))
            {
                case SthreadStatus.Completed:
                    _inFlight.RemoveAt(index);
                    target.Needs.UnionWith(message.Needs);
                    message.ConsumedBySthread = true;
                    Stats.SthreadReceives++;
                    break;
                case SthreadStatus.Discard:
                    _inFlight.RemoveAt(index);
                    message.Discarded = true;
                    Stats.Discarded++;
                    break;
                default:
                    break;   // from a world-line the sthread's owner has not reached: later
            }
        }
        catch (DseRolledBackException)
        {
            target.Dead = true;
            _inFlight.RemoveAt(index);
            message.Discarded = true;
        }
    }

    /// <summary>Starts an action, advancing the version first where commit ordering requires it.</summary>
    private async Task<StartActionStatus> StartAsync(MemoryStateObject so, DseHeader header)
    {
        var status = so.TryStartAction(header);
        if (status == StartActionStatus.Implausible)
        {
            // The receiver's view predates the sender's connect. Header rules: a real message passes once the view is fresh.
            await so.RefreshAsync();
            status = so.TryStartAction(header);
            if (status == StartActionStatus.Implausible)
            {
                throw new InvalidOperationException(Fail($"the header rules refused a real message ({header}) after a refresh"));
            }
        }

        if (status == StartActionStatus.VersionBehind)
        {
            long max = 0;
            for (int i = 0; i < header.DependencyCount; i++)
            {
                max = Math.Max(max, header.GetDependency(i).Version);
            }

            await so.AdvanceVersionToAsync(max);
            status = so.TryStartAction(header);
            Assert.NotEqual(StartActionStatus.VersionBehind, status);
        }

        return status;
    }

    private void Detach()
    {
        var node = PickAlive();
        if (node is null)
        {
            return;
        }

        var so = node.Instance!;
        Assert.True(so.TryStartLocalAction());
        long detach = NewEvent(node.Id, []);
        so.Record(detach);
        var sthread = so.Detach();
        _sthreads.Add(new SimSthread(node, so, sthread, [detach]));
        Stats.Detached++;
    }

    private SimSthread? PickSthread()
    {
        var live = _sthreads.Where(s => !s.Dead).ToList();
        return live.Count == 0 ? null : live[_rng.Next(live.Count)];
    }

    /// <summary>An sthread calls a StateObject and takes its reply (a long-running, asynchronous interaction).</summary>
    private async Task SthreadCallAsync()
    {
        var s = PickSthread();
        var target = _nodes[_rng.Next(_nodes.Length)];
        if (s is null || target.Instance is null)
        {
            return;
        }

        DseHeader request;
        try
        {
            request = s.Sthread.Send();
        }
        catch (DseRolledBackException)
        {
            s.Dead = true;
            return;
        }

        var so = target.Instance;
        var status = await StartAsync(so, request);
        if (status == StartActionStatus.WorldLineBehind)
        {
            await so.RefreshAsync();
            status = await StartAsync(so, request);
        }

        if (status != StartActionStatus.Accepted)
        {
            return;
        }

        long served = NewEvent(target.Id, s.Needs);
        so.Record(served);
        var reply = so.EndAction();
        try
        {
            if (s.Sthread.TryReceive(reply) == SthreadStatus.Completed)
            {
                s.Needs.Add(served);
            }
        }
        catch (DseRolledBackException)
        {
            s.Dead = true;
        }
    }

    private void Barrier()
    {
        var s = PickSthread();
        if (s is null)
        {
            return;
        }

        var observed = s.Sthread.Dependencies.ToArray();
        try
        {
            if (s.Sthread.TryBarrier() == SthreadStatus.Completed)
            {
                // Everything the sthread observed may now be shown to the outside world: it must never be lost.
                foreach (var d in observed)
                {
                    _maxExposedVersion[d.ObjectId] = Math.Max(_maxExposedVersion.GetValueOrDefault(d.ObjectId), d.Version);
                }

                _exposed.UnionWith(s.Needs);
                Stats.BarriersPassed++;
            }
        }
        catch (DseRolledBackException)
        {
            s.Dead = true;
            Stats.SthreadsRolledBack++;
        }
    }

    private async Task MergeAsync()
    {
        var s = PickSthread();
        if (s is null || s.Node.Instance != s.Owner)
        {
            return;
        }

        var so = s.Owner;
        var status = so.TryMerge(s.Sthread);
        if (status == StartActionStatus.VersionBehind)
        {
            long max = s.Sthread.Dependencies.ToArray().Max(d => d.Version);
            await so.AdvanceVersionToAsync(max);
            status = so.TryMerge(s.Sthread);
        }

        if (status == StartActionStatus.Accepted)
        {
            long merged = NewEvent(s.Node.Id, s.Needs);
            so.Record(merged);
            so.EndAction();
            s.Dead = true;
            Stats.Merged++;
        }
        else if (status == StartActionStatus.Discard)
        {
            s.Dead = true;
        }
    }

    private async Task CrashAsync()
    {
        var node = PickAlive();
        if (node is null)
        {
            return;
        }

        // The process dies: in-flight persists are lost (or torn), its sthreads die with it.
        await node.Instance!.DisposeAsync();
        await node.Store.CrashAsync(_rng);
        foreach (var s in _sthreads.Where(s => s.Owner == node.Instance))
        {
            s.Dead = true;
        }

        node.Instance = null;
        node.RestartAt = _step + _rng.Next(1, 25);
        Stats.Crashes++;
    }

    private async Task RestartDueNodesAsync()
    {
        foreach (var node in _nodes)
        {
            if (node.Instance is null && node.RestartAt <= _step)
            {
                await node.Store.ReopenAsync();
                if (!await StartAsync(node))
                {
                    node.RestartAt = _step + 1;
                }
            }
        }
    }

    /// <summary>Starts a node; false if the coordinator is recovering (or crashed meanwhile) and it must try again later.</summary>
    private async Task<bool> StartAsync(Node node)
    {
        // A clock that never moves: versions advance only when the simulation says so, never by wall-clock luck.
        var so = MemoryStateObject.Create(node.Id, node.Store, time: _clock);
        so.OnRestore = version => CheckRestore(node.Id, version);
        bool connected;
        try
        {
            connected = await so.TryConnectAsync(_coordinator);
        }
        catch (DseCoordinatorException ex) when (ex.Code == CoordinatorErrorCode.Unavailable && _coordinator.Current.Fault is not null)
        {
            connected = false;
            await RestartCoordinatorIfDownAsync();
        }

        if (!connected)
        {
            await so.DisposeAsync();
            Stats.ConnectRetries++;
            return false;
        }

        node.Instance = so;
        return true;
    }

    /// <summary>The coordinator process dies (losing everything not journaled) and a new incarnation recovers.</summary>
    private async Task RestartCoordinatorAsync()
    {
        Stats.CoordinatorCrashes++;
        await _coordinator.Current.DisposeAsync();
        _coordinator.Current = await ClusterCoordinator.OpenAsync(_journal!, [.. _journal!.Entries]);
    }

    private async Task RestartCoordinatorIfDownAsync()
    {
        if (_journal is not null && _coordinator.Current.Fault is not null)
        {
            Stats.TornJournalAppends++;
            await RestartCoordinatorAsync();
        }
    }

    private void CheckRestore(long id, long version)
    {
        long exposed = _maxExposedVersion.GetValueOrDefault(id);
        Assert.True(version >= exposed, Fail($"object {id} restored version {version}, below version {exposed} that a barrier exposed"));
        long committed = _maxCommitted.GetValueOrDefault(id);
        Assert.True(version >= committed, Fail($"object {id} restored version {version}, below its committed version {committed}"));
        Stats.Restores++;
    }

    private void CheckCommittedMonotonic()
    {
        // A recovering coordinator publishes only the floors it has heard of; once recovered, nothing may be below before.
        var state = _coordinator.Current.State;
        if (state.IsRecovering)
        {
            return;
        }

        foreach (var kv in state.Committed)
        {
            long before = _maxCommitted.GetValueOrDefault(kv.Key);
            Assert.True(kv.Value >= before, Fail($"committed version of {kv.Key} went back from {before} to {kv.Value}"));
            _maxCommitted[kv.Key] = kv.Value;
        }
    }

    /// <summary>Failures have stopped: restart everyone, drain the network and durability, and require progress.</summary>
    private async Task QuiesceAsync()
    {
        for (int round = 0; _nodes.Any(n => n.Instance is null); round++)
        {
            Assert.True(round < 10, Fail("a node could not connect after failures stopped"));
            foreach (var node in _nodes.Where(n => n.Instance is null))
            {
                await node.Store.ReopenAsync();
                await StartAsync(node);
            }

            // Live nodes answer a recovering coordinator with their resync.
            foreach (var node in _nodes.Where(n => n.Instance is not null))
            {
                await node.Instance!.RefreshAsync();
            }
        }

        for (int round = 0; round < 50 && _inFlight.Count > 0; round++)
        {
            foreach (var node in _nodes)
            {
                await node.Instance!.RefreshAsync();
            }

            for (int i = _inFlight.Count - 1; i >= 0; i--)
            {
                await DeliverAsync(i);
            }
        }

        Assert.True(_inFlight.Count == 0, Fail($"{_inFlight.Count} messages could not be delivered or discarded after failures stopped"));

        // Liveness: two rounds of persist-and-refresh make every version durable with durable dependencies.
        var target = new Dictionary<long, long>();
        for (int round = 0; round < 3; round++)
        {
            foreach (var node in _nodes)
            {
                target[node.Id] = node.Instance!.CurrentVersion;
                await node.Instance.AdvanceVersionAsync();
                await node.Store.CompleteOldestAsync(int.MaxValue);
            }

            foreach (var node in _nodes)
            {
                await node.Instance!.RefreshAsync();
            }

            CheckCommittedMonotonic();
        }

        foreach (var node in _nodes)
        {
            Assert.True(node.Instance!.CommittedVersion >= target[node.Id], Fail($"boundary stuck after failures stopped: object {node.Id} committed {node.Instance.CommittedVersion}, persisted {target[node.Id]}"));
        }

        foreach (var s in _sthreads.Where(s => !s.Dead))
        {
            try
            {
                Assert.True(s.Sthread.TryBarrier() == SthreadStatus.Completed, Fail("a live sthread's barrier did not pass after the boundary caught up"));
                _exposed.UnionWith(s.Needs);
            }
            catch (DseRolledBackException)
            {
                Stats.SthreadsRolledBack++;
            }
        }
    }

    private void CheckFinalSafety()
    {
        var surviving = new HashSet<long>();
        foreach (var node in _nodes)
        {
            surviving.UnionWith(node.Instance!.History);
        }

        foreach (var node in _nodes)
        {
            foreach (long e in node.Instance!.History)
            {
                var ev = _events[e];
                Assert.True(ev.Owner == node.Id, Fail($"event {e} of object {ev.Owner} appears in the history of object {node.Id}"));
                foreach (long need in ev.Needs)
                {
                    Assert.True(surviving.Contains(need), Fail($"object {node.Id} kept event {e}, which depends on event {need} of object {_events[need].Owner}, which was lost"));
                }
            }
        }

        // A message whose sender state was lost must have been discarded, or its consumption rolled back too.
        foreach (var m in _allMessages)
        {
            if (m.Needs.All(surviving.Contains))
            {
                continue;
            }

            Stats.MessagesFromLostState++;
            Assert.True(m.Discarded || m.ConsumedBySthread || !surviving.Contains(m.ConsumedAs), Fail($"a message from lost state (needs event {m.Needs[0]}) was consumed as event {m.ConsumedAs}, which survived"));
            if (m.Discarded)
            {
                Stats.LostStateMessagesDiscarded++;
            }
        }

        foreach (long e in _exposed)
        {
            Assert.True(surviving.Contains(e), Fail($"event {e} of object {_events[e].Owner} passed a barrier and was later lost"));
        }

        Stats.Lost = _events.Count - surviving.Count;
    }

    private string Fail(string what) => $"seed {_seed}, step {_step}: {what}";

    private sealed record Event(long Id, long Owner, long[] Needs);

    private sealed record Message(DseHeader Header, long To, long[] Needs)
    {
        /// <summary>Set for a message addressed to an sthread (a reply that arrives late, for example).</summary>
        public SimSthread? ToSthread { get; init; }

        public bool Discarded { get; set; }

        public long ConsumedAs { get; set; }

        public bool ConsumedBySthread { get; set; }
    }

    private sealed class Node(long id, IVersionStore store)
    {
        public long Id { get; } = id;

        public IVersionStore Store { get; } = store;

        public MemoryStateObject? Instance { get; set; }

        public int RestartAt { get; set; }
    }

    private sealed class SimSthread(Node node, MemoryStateObject owner, Sthread sthread, HashSet<long> needs)
    {
        public Node Node { get; } = node;

        public MemoryStateObject Owner { get; } = owner;

        public Sthread Sthread { get; } = sthread;

        public HashSet<long> Needs { get; } = needs;

        public bool Dead { get; set; }
    }
}

/// <summary>What a simulation run did, summed over seeds to show the runs exercised the protocol.</summary>
internal sealed class SimulationStats
{
    public int Sent { get; set; }

    public int Accepted { get; set; }

    public int Discarded { get; set; }

    public int Delayed { get; set; }

    public int Crashes { get; set; }

    public int Restores { get; set; }

    public int Detached { get; set; }

    public int Merged { get; set; }

    public int BarriersPassed { get; set; }

    public int SthreadsRolledBack { get; set; }

    public int Lost { get; set; }

    public int TornWrites { get; set; }

    public int MessagesFromLostState { get; set; }

    public int SthreadReceives { get; set; }

    public int LostStateMessagesDiscarded { get; set; }

    public int CoordinatorCrashes { get; set; }

    public int TornJournalAppends { get; set; }

    public int ConnectRetries { get; set; }

    public int Forged { get; set; }

    public void Add(SimulationStats other)
    {
        Forged += other.Forged;
        CoordinatorCrashes += other.CoordinatorCrashes;
        TornJournalAppends += other.TornJournalAppends;
        ConnectRetries += other.ConnectRetries;
        Sent += other.Sent;
        Accepted += other.Accepted;
        Discarded += other.Discarded;
        Delayed += other.Delayed;
        Crashes += other.Crashes;
        Restores += other.Restores;
        Detached += other.Detached;
        Merged += other.Merged;
        BarriersPassed += other.BarriersPassed;
        SthreadsRolledBack += other.SthreadsRolledBack;
        Lost += other.Lost;
        TornWrites += other.TornWrites;
        MessagesFromLostState += other.MessagesFromLostState;
        SthreadReceives += other.SthreadReceives;
        LostStateMessagesDiscarded += other.LostStateMessagesDiscarded;
    }

    public override string ToString() =>
        $"sent {Sent}, accepted {Accepted}, discarded {Discarded}, delayed {Delayed}, crashes {Crashes}, restores {Restores}, " +
        $"sthreads {Detached} (merged {Merged}, rolled back {SthreadsRolledBack}, late messages received {SthreadReceives}), barriers passed {BarriersPassed}, events lost {Lost}, torn writes {TornWrites}, " +
        $"messages from lost state {MessagesFromLostState} (discarded on arrival {LostStateMessagesDiscarded}, the rest rolled back with their receiver), " +
        $"coordinator crashes {CoordinatorCrashes} (in a journal append {TornJournalAppends}), connects told to retry {ConnectRetries}, forged headers {Forged}";
}
