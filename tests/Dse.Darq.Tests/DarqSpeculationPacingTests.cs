using System.Diagnostics.Metrics;

namespace Dse.Darq.Tests;

/// <summary>
/// General speculation's backpressure: a coordinator that commits more slowly than versions advance (or not at all) holds
/// new actions back instead of letting the uncommitted versions' records overflow the commit record, which used to fault
/// the DARQ's StateObject for good. The coordinator is "paused" by a dependency: A receives from B's first version, which
/// B does not persist until the test says so, so none of A's versions from then on can be committed.
/// </summary>
public sealed class DarqSpeculationPacingTests
{
    private static readonly TimeSpan HangGuard = TimeSpan.FromSeconds(60);

    /// <summary>B advances only when the test says so; A as configured (by default LibDse's periodic advance every 5 ms).</summary>
    private static Action<DarqOptions> Paced(string name, IDseCoordinator coordinator, TimeSpan period, Action<DarqOptions>? more = null) => o =>
    {
        DarqGeneralSpeculationTests.General(name, 1, coordinator)(o);
        o.Dse = new DseOptions
        {
            ObjectId = 1,
            RunBackgroundTasks = true,
            GroupCommitPeriod = period,
            HeartbeatPeriod = TimeSpan.FromMinutes(10),
        };
        more?.Invoke(o);
    };

    /// <summary>Opens B (id 2, manual versions) delivering to A, and makes A depend on B's first, unpersisted version.</summary>
    private static async Task<Darq> PauseCoordinatorForAsync(Darq a, ClusterCoordinator coordinator, CancellationToken cancellationToken)
    {
        var destinations = new TestDestinations();
        destinations.Registry.Add(a);
        var b = await new DarqTestStorage().OpenAsync(DarqGeneralSpeculationTests.General(a.Name + "-b", 2, coordinator, destinations));
        var processor = await b.RegisterProcessorAsync(cancellationToken);
        var sent = await processor.StepAsync(new DarqStep().AddOut(a.Name, "hold".Bytes()), cancellationToken);
        await b.WaitForDeliveredAsync(sent.OutLsns[0], cancellationToken);
        return b;
    }

    /// <summary>With the coordinator paused and <c>MaxUncommittedVersions</c> 2: two enqueues, each in a version persisted that cannot be committed; new actions are held from then on.</summary>
    private static async Task PersistTwoUncommittableVersionsAsync(Darq a, CancellationToken cancellationToken)
    {
        await a.EnqueueAsync(5, 1, "one".Bytes(), cancellationToken);
        await a.DseStateObject!.AdvanceVersionAsync(cancellationToken);
        await a.EnqueueAsync(5, 2, "two".Bytes(), cancellationToken);
        await a.DseStateObject.AdvanceVersionAsync(cancellationToken);
        Assert.True(a.IsBackpressured);
    }

    [Fact]
    [Trait("Category", "Recovery")]
    public async Task Enqueue_CoordinatorFallsBehindPeriodicVersions_HeldNotFaulted_AllSucceedAfterItCommitsAndReopenRecoversThem()
    {
        using var guard = new CancellationTokenSource(HangGuard);
        const string name = "pace-periodic";
        var coordinator = new ClusterCoordinator();
        var storage = new DarqTestStorage();
        using var held = new HeldActions(name);
        const int producers = 8;
        var last = new long[producers];
        var a = await storage.OpenAsync(Paced(name, coordinator, TimeSpan.FromMilliseconds(5)));
        try
        {
            await using var b = await PauseCoordinatorForAsync(a, coordinator, guard.Token);

            // Producers enqueue (each version gets an undo entry per producer) while A advances every 5 ms and nothing
            // commits: without backpressure the records overflow the commit record within a few hundred versions, the
            // persist fails, and the next enqueue finds the StateObject faulted.
            int stop = 0;
            var tasks = new Task[producers];
            for (int p = 0; p < producers; p++)
            {
                int producer = p;
                tasks[p] = Task.Run(async () =>
                {
                    long sequence = 0;
                    while (Volatile.Read(ref stop) == 0)
                    {
                        sequence++;
                        await a.EnqueueAsync(producer + 1, sequence, $"{producer}:{sequence}".Bytes(), guard.Token);
                        Volatile.Write(ref last[producer], sequence);
                    }
                });
            }

            // The producers end up waiting; a producer that failed instead of being held would surface its error here.
            var anyEnded = Task.WhenAny(tasks);
            await Task.WhenAny(held.WaitAsync(producers, guard.Token), anyEnded);
            if (anyEnded.IsCompleted)
            {
                await await anyEnded;
            }

            Assert.Null(a.DseStateObject!.Fault);
            Assert.True(a.IsBackpressured);
            Assert.True(a.UncommittedVersionCount <= new DarqOptions().MaxUncommittedVersions + 1, $"{a.UncommittedVersionCount} uncommitted versions");
            Volatile.Write(ref stop, 1);

            // The commit record still fits: an explicit commit succeeds while the coordinator is paused.
            await a.CommitAsync(guard.Token);
            Assert.All(tasks, t => Assert.False(t.IsCompleted));

            // The coordinator resumes: B persists its version, A's versions are committed and pruned, the producers go on.
            await b.DseStateObject!.AdvanceVersionAsync(guard.Token);
            await Task.WhenAll(tasks).WaitAsync(guard.Token);
            Assert.Null(a.DseStateObject.Fault);
            Assert.False(a.IsBackpressured);
            long total = last.Sum();
            Assert.Equal(total + 1, a.UnconsumedCount);

            // Everything recoverable, then a reopen on the same storage restores it all.
            await a.WaitForRecoverableAsync(a.TailAddress, guard.Token);
        }
        finally
        {
            await a.DisposeAsync();
        }

        await using var reopened = await storage.OpenAsync(Paced(name, coordinator, TimeSpan.FromMilliseconds(5)));
        Assert.Equal(last.Sum() + 1, reopened.UnconsumedCount);
        var processor = await reopened.RegisterProcessorAsync(guard.Token);
        var seen = processor.Drain().Where(m => m.Text() != "hold").Select(m => m.Text()).ToHashSet();
        for (int p = 0; p < producers; p++)
        {
            for (long s = 1; s <= last[p]; s++)
            {
                Assert.Contains($"{p}:{s}", seen);
            }

            Assert.True((await reopened.EnqueueAsync(p + 1, last[p], "again".Bytes(), guard.Token)).IsDuplicate);
        }
    }

    [Fact]
    public async Task Actions_HeldAndCancelled_ChangeNothingAndSucceedLater()
    {
        using var guard = new CancellationTokenSource(HangGuard);
        const string name = "pace-cancel";
        var coordinator = new ClusterCoordinator();
        using var held = new HeldActions(name);
        await using var a = await new DarqTestStorage().OpenAsync(Paced(name, coordinator, TimeSpan.FromMinutes(10), o => o.MaxUncommittedVersions = 2));
        await using var b = await PauseCoordinatorForAsync(a, coordinator, guard.Token);
        var processor = await a.RegisterProcessorAsync(guard.Token);
        var hold = await processor.Messages.ReadAsync(guard.Token);

        // Two versions persisted that cannot be committed: new actions wait.
        await PersistTwoUncommittableVersionsAsync(a, guard.Token);
        Assert.Equal(2, a.UncommittedVersionCount);
        long tail = a.TailAddress;
        int unconsumed = a.UnconsumedCount;

        // A held enqueue and a held step, cancelled through their tokens: nothing appended, nothing consumed.
        using (var cancel = CancellationTokenSource.CreateLinkedTokenSource(guard.Token))
        {
            var enqueue = a.EnqueueAsync(5, 3, "three".Bytes(), cancel.Token).AsTask();
            var step = processor.StepAsync(new DarqStep().Consume(hold).AddSelf("state".Bytes()), cancel.Token).AsTask();
            await held.WaitAsync(2, guard.Token);
            Assert.False(enqueue.IsCompleted);
            Assert.False(step.IsCompleted);
            await cancel.CancelAsync();
            await Assert.ThrowsAnyAsync<OperationCanceledException>(() => enqueue);
            await Assert.ThrowsAnyAsync<OperationCanceledException>(() => step);
        }

        Assert.Equal(tail, a.TailAddress);
        Assert.Equal(unconsumed, a.UnconsumedCount);
        Assert.Null(a.DseStateObject!.Fault);

        // The coordinator resumes: the same enqueue and step go through (the sequence number was never taken).
        var waiting = a.EnqueueAsync(5, 3, "three".Bytes(), guard.Token).AsTask();
        await held.WaitAsync(3, guard.Token);
        await b.DseStateObject!.AdvanceVersionAsync(guard.Token);
        var third = await waiting.WaitAsync(guard.Token);
        Assert.False(third.IsDuplicate);
        var stepped = await processor.StepAsync(new DarqStep().Consume(hold).AddSelf("state".Bytes()), guard.Token);
        Assert.Single(stepped.SelfLsns);
        Assert.False(a.IsBackpressured);
        Assert.Null(a.DseStateObject.Fault);
    }

    [Fact]
    public async Task DiscardOut_WhileHeld_WaitsBeforeAppendingThenDiscardsOnceThereIsRoom()
    {
        using var guard = new CancellationTokenSource(HangGuard);
        const string name = "pace-discard";
        var coordinator = new ClusterCoordinator();
        using var held = new HeldActions(name);
        await using var a = await new DarqTestStorage().OpenAsync(Paced(name, coordinator, TimeSpan.FromMinutes(10), o => o.MaxUncommittedVersions = 2));
        await using var b = await PauseCoordinatorForAsync(a, coordinator, guard.Token);
        var processor = await a.RegisterProcessorAsync(guard.Token);
        var hold = await processor.Messages.ReadAsync(guard.Token);

        // A pending OUT message (nothing delivers it), then two versions that cannot be committed: new actions wait.
        var sent = await processor.StepAsync(new DarqStep().Consume(hold).AddOut("nowhere", "lost cause".Bytes()), guard.Token);
        long outLsn = sent.OutLsns[0];
        await PersistTwoUncommittableVersionsAsync(a, guard.Token);
        long tail = a.TailAddress;

        // The discard is an action like any other: it waits before it starts, appending nothing. Before, it went ahead and
        // added to the versions that could not be committed.
        int heldBefore = held.Count;
        var discard = a.DiscardOutAsync(outLsn, guard.Token).AsTask();
        await held.WaitAsync(heldBefore + 1, guard.Token);
        Assert.False(discard.IsCompleted);
        Assert.Equal(tail, a.TailAddress);
        Assert.Equal(1, a.PendingOutCount);

        // The coordinator resumes: the discard goes through, and returns once its version is recoverable.
        await b.DseStateObject!.AdvanceVersionAsync(guard.Token);
        while (!discard.IsCompleted)
        {
            await a.WaitForSpeculationRoomAsync(guard.Token);
            await a.DseStateObject!.AdvanceVersionAsync(guard.Token);
            await Task.WhenAny(discard, Task.Delay(10, guard.Token));
        }

        Assert.True(await discard);
        Assert.Equal(0, a.PendingOutCount);
        Assert.False(a.IsBackpressured);
        Assert.Null(a.DseStateObject!.Fault);
    }

    [Fact]
    public async Task Enqueue_NewProducerWouldOverflowUndoTables_HeldUntilCommitThenAppended()
    {
        using var guard = new CancellationTokenSource(HangGuard);
        const string name = "pace-undo";
        var coordinator = new ClusterCoordinator();
        using var held = new HeldActions(name);
        await using var a = await new DarqTestStorage().OpenAsync(Paced(name, coordinator, TimeSpan.FromMinutes(10), o =>
        {
            o.MaxUncommittedVersions = DarqOptions.MaxUncommittedVersionsLimit;
            o.MaxSpeculationBytes = DarqOptions.MaxSpeculationBytesLimit;
        }));
        await using var b = await PauseCoordinatorForAsync(a, coordinator, guard.Token);

        // About 11.5 KiB of empty version records: under the budget, so a new action is let in; but a producer new to all
        // of them would add an undo entry to each (about 2.9 KiB), past the room kept for later records.
        while (a.UncommittedVersionCount < 180)
        {
            await a.DseStateObject!.AdvanceVersionAsync(guard.Token);
        }

        Assert.False(a.IsBackpressured);
        long tail = a.TailAddress;
        var enqueue = a.EnqueueAsync(9, 1, "new producer".Bytes(), guard.Token).AsTask();
        await Task.WhenAny(held.WaitAsync(1, guard.Token), enqueue);
        Assert.False(enqueue.IsCompleted, "the enqueue took the room kept for later version records");
        Assert.Equal(tail, a.TailAddress);
        await a.CommitAsync(guard.Token);

        // Enqueues that change nothing in the undo tables are not held.
        await a.EnqueueAsync("plain".Bytes(), guard.Token);

        await b.DseStateObject!.AdvanceVersionAsync(guard.Token);
        var result = await enqueue.WaitAsync(guard.Token);
        Assert.False(result.IsDuplicate);
        Assert.Null(a.DseStateObject!.Fault);
    }

    [Fact]
    public async Task Dispose_WhileAnEnqueueIsHeld_TheEnqueueFailsAndDisposeCompletes()
    {
        using var guard = new CancellationTokenSource(HangGuard);
        const string name = "pace-dispose";
        var coordinator = new ClusterCoordinator();
        using var held = new HeldActions(name);
        var a = await new DarqTestStorage().OpenAsync(Paced(name, coordinator, TimeSpan.FromMinutes(10), o => o.MaxUncommittedVersions = 1));
        await using var b = await PauseCoordinatorForAsync(a, coordinator, guard.Token);
        await a.DseStateObject!.AdvanceVersionAsync(guard.Token);
        Assert.True(a.IsBackpressured);

        var enqueue = a.EnqueueAsync(5, 1, "x".Bytes(), guard.Token).AsTask();
        var room = a.WaitForSpeculationRoomAsync(guard.Token).AsTask();
        await held.WaitAsync(2, guard.Token);
        await a.DisposeAsync().AsTask().WaitAsync(guard.Token);

        await Assert.ThrowsAsync<ObjectDisposedException>(() => enqueue.WaitAsync(guard.Token));
        await Assert.ThrowsAsync<ObjectDisposedException>(() => room.WaitAsync(guard.Token));
    }

    [Theory]
    [InlineData(nameof(DarqOptions.MaxUncommittedVersions), 0)]
    [InlineData(nameof(DarqOptions.MaxUncommittedVersions), DarqOptions.MaxUncommittedVersionsLimit + 1)]
    [InlineData(nameof(DarqOptions.MaxSpeculationBytes), DarqOptions.MinSpeculationBytes - 1)]
    [InlineData(nameof(DarqOptions.MaxSpeculationBytes), DarqOptions.MaxSpeculationBytesLimit + 1)]
    public async Task OpenAsync_PacingBoundOutOfRange_ThrowsNamingTheOption(string option, int value)
    {
        var storage = new DarqTestStorage();
        var error = await Assert.ThrowsAsync<ArgumentOutOfRangeException>(() => storage.OpenAsync(o =>
        {
            if (option == nameof(DarqOptions.MaxUncommittedVersions))
            {
                o.MaxUncommittedVersions = value;
            }
            else
            {
                o.MaxSpeculationBytes = value;
            }
        }));

        Assert.Equal(option, error.ParamName);
        Assert.Contains($"DarqOptions.{option}", error.Message, StringComparison.Ordinal);

        // Refused before anything was written: the storage opens empty.
        await using var darq = await storage.OpenAsync();
        Assert.Equal(darq.BeginAddress, darq.TailAddress);
    }

    /// <summary>Counts the held actions of one DARQ (the <c>dse.darq.speculation.held</c> counter) and lets a test wait for a count.</summary>
    private sealed class HeldActions : IDisposable
    {
        private readonly MeterListener _listener;
        private readonly Lock _lock = new();
        private readonly List<(int Count, TaskCompletionSource Signal)> _waiters = [];
        private int _count;

        public HeldActions(string darq)
        {
            _listener = new MeterListener
            {
                InstrumentPublished = (instrument, l) =>
                {
                    if (instrument.Meter.Name == DarqInstrumentation.MeterName && instrument.Name == "dse.darq.speculation.held")
                    {
                        l.EnableMeasurementEvents(instrument);
                    }
                },
            };
            _listener.SetMeasurementEventCallback<long>((_, value, tags, _) =>
            {
                foreach (var tag in tags)
                {
                    if (tag.Key == "darq" && (string?)tag.Value == darq)
                    {
                        Add((int)value);
                    }
                }
            });
            _listener.Start();
        }

        public Task WaitAsync(int count, CancellationToken cancellationToken)
        {
            lock (_lock)
            {
                if (_count >= count)
                {
                    return Task.CompletedTask;
                }

                var signal = new TaskCompletionSource(TaskCreationOptions.RunContinuationsAsynchronously);
                _waiters.Add((count, signal));
                return signal.Task.WaitAsync(cancellationToken);
            }
        }

        /// <summary>The actions held so far.</summary>
        public int Count
        {
            get
            {
                lock (_lock)
                {
                    return _count;
                }
            }
        }

        public void Dispose() => _listener.Dispose();

        private void Add(int value)
        {
            lock (_lock)
            {
                _count += value;
                foreach (var (count, signal) in _waiters)
                {
                    if (_count >= count)
                    {
                        signal.TrySetResult();
                    }
                }
            }
        }
    }
}
