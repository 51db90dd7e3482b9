using Microsoft.Extensions.Time.Testing;

namespace Dse.Tests;

/// <summary>The journaled coordinator: what it writes, how it recovers, resync, retry, heartbeats and removal.</summary>
public class CoordinatorRecoveryTests
{
    private static ConnectRequest Request(long id, params VersionReport[] versions) => new(id, versions);

    private static VersionReport V(long version, long worldLine = 0, params Dependency[] deps) => new(version, worldLine, deps);

    private static Task<ClusterCoordinator> OpenAsync(ListJournal journal, ClusterCoordinatorOptions? options = null) =>
        ClusterCoordinator.OpenAsync(journal, [.. journal.Entries], options);

    [Fact]
    public async Task FailureFreeRun_JournalsNothingAfterMembershipIsSettled()
    {
        var journal = new ListJournal();
        var c = await OpenAsync(journal);
        var a = await TestCluster.ConnectAsync(c, 1);
        var b = await TestCluster.ConnectAsync(c, 2);
        int settled = journal.Appends;
        Assert.Equal(3, settled);   // started, two registrations

        for (int i = 0; i < 50; i++)
        {
            var header = TestCluster.Send(a, i);
            Assert.True(await TestCluster.ReceiveAsync(b, header, 1000 + i));
            await TestCluster.SettleAsync(a, b);
            await c.HeartbeatAsync(1);
        }

        Assert.True(c.State.CommittedVersion(2) >= 50);
        Assert.Equal(settled, journal.Appends);
    }

    [Fact]
    public async Task Restart_JournalsTheDecisionBeforeAnsweringIt()
    {
        var journal = new ListJournal();
        var c = await OpenAsync(journal);
        await c.ConnectAsync(Request(1));
        await c.ConnectAsync(Request(2));
        await c.ReportPersistedAsync(1, V(1, 0, new Dependency(2, 1)));   // not committed: 2 never reported its version 1

        var response = await c.ConnectAsync(Request(1));

        var decided = Assert.IsType<RollbackDecidedEntry>(journal.Entries[^1]);
        Assert.Equal(1, decided.Decision.WorldLine);
        Assert.Equal(1, decided.Decision.FailedObjectId);
        Assert.Equal(RollbackReason.Restart, decided.Decision.Reason);
        Assert.True(response.IsRestart);
        Assert.Equal(0, response.RestoreVersion);
    }

    [Fact]
    public async Task NewIncarnation_HasHigherEpochsAndWaitsForEveryParticipant()
    {
        var journal = new ListJournal();
        var first = await OpenAsync(journal);
        await first.ConnectAsync(Request(1));
        await first.ConnectAsync(Request(2));
        await first.ReportPersistedAsync(1, V(1));
        await first.ReportPersistedAsync(2, V(1, 0, new Dependency(1, 1)));
        var last = first.State;
        Assert.Equal(1, last.CommittedVersion(2));

        var second = await OpenAsync(journal);

        Assert.Equal(2, second.Incarnation);
        Assert.True(second.State.Epoch > last.Epoch, "epochs must stay monotone across incarnations");
        Assert.True(second.State.IsRecovering);

        // Participant 1 answers with a version that depends on nothing; the boundary must still wait for 2.
        await second.ResyncAsync(new ResyncRequest(1, 0, [V(2)], last.Committed));
        Assert.True(second.State.IsRecovering);
        Assert.Equal(1, second.State.CommittedVersion(1));
        var refused = await Assert.ThrowsAsync<DseCoordinatorException>(() => second.ReportPersistedAsync(2, V(2)).AsTask());
        Assert.Equal(CoordinatorErrorCode.ResyncRequired, refused.Code);

        await second.ResyncAsync(new ResyncRequest(2, 0, [], new Dictionary<long, long> { [1] = 1, [2] = 1 }));

        Assert.False(second.State.IsRecovering);
        Assert.Equal(2, second.State.CommittedVersion(1));
        Assert.Equal(1, second.State.CommittedVersion(2));
    }

    [Fact]
    public async Task Recovery_ReconstructsABoundaryNoSurvivingViewHad()
    {
        // The old incarnation committed 2 of participant 1 and 1 of participant 2, but only a participant that then
        // crashed saw it. The new incarnation must get there again from the fragments alone.
        var journal = new ListJournal();
        var first = await OpenAsync(journal);
        await first.ConnectAsync(Request(1));
        await first.ConnectAsync(Request(2));
        await first.ConnectAsync(Request(3));
        await first.ReportPersistedAsync(1, V(1));
        await first.ReportPersistedAsync(1, V(2, 0, new Dependency(2, 1)));
        await first.ReportPersistedAsync(2, V(1, 0, new Dependency(1, 2)));
        Assert.Equal(2, first.State.CommittedVersion(1));

        var second = await OpenAsync(journal);
        var empty = new Dictionary<long, long>();
        await second.ResyncAsync(new ResyncRequest(1, 0, [V(1), V(2, 0, new Dependency(2, 1))], empty));
        await second.ResyncAsync(new ResyncRequest(2, 0, [V(1, 0, new Dependency(1, 2))], empty));
        var retry = await second.ConnectAsync(Request(3));

        Assert.True(retry.MustRetry);
        Assert.False(second.State.IsRecovering);
        Assert.Equal(2, second.State.CommittedVersion(1));
        Assert.Equal(1, second.State.CommittedVersion(2));
    }

    [Fact]
    public async Task ConnectDuringRecovery_RecordsTheAnswerAndRetriesIntoARestart()
    {
        var journal = new ListJournal();
        var first = await OpenAsync(journal);
        await first.ConnectAsync(Request(1));
        await first.ConnectAsync(Request(2));
        await first.ReportPersistedAsync(1, V(1));
        await first.ReportPersistedAsync(2, V(1, 0, new Dependency(1, 1)));
        await first.ReportPersistedAsync(2, V(2, 0, new Dependency(1, 2)));   // 1's version 2 was never reported: lost

        var second = await OpenAsync(journal);

        // Both participants are down; each connect records its answer and is told to retry, so neither waits for the other.
        var r1 = await second.ConnectAsync(Request(1, V(1)));
        Assert.True(r1.MustRetry);
        Assert.True(second.State.IsRecovering);
        var r2 = await second.ConnectAsync(Request(2, V(1, 0, new Dependency(1, 1)), V(2, 0, new Dependency(1, 2))));
        Assert.True(r2.MustRetry);
        Assert.False(second.State.IsRecovering);

        var again1 = await second.ConnectAsync(Request(1, V(1)));
        Assert.False(again1.MustRetry);
        Assert.True(again1.IsRestart);
        Assert.Equal(1, again1.RestoreVersion);
        var decision = again1.State.Decisions[^1];
        Assert.Equal(1, decision.CutFor(2));   // 2's version 2 observed 1's lost version 2
        var again2 = await second.ConnectAsync(Request(2, V(1, 0, new Dependency(1, 1))));
        Assert.Equal(1, again2.RestoreVersion);
    }

    [Fact]
    public async Task ResyncFromTheFuture_AndUnknownIds_AreRefusedAndChangeNothing()
    {
        var journal = new ListJournal();
        var first = await OpenAsync(journal);
        await first.ConnectAsync(Request(1));
        var second = await OpenAsync(journal);
        long epoch = second.State.Epoch;

        var future = await Assert.ThrowsAsync<DseCoordinatorException>(() => second.ResyncAsync(new ResyncRequest(1, 3, [], new Dictionary<long, long>())).AsTask());
        var unknown = await Assert.ThrowsAsync<DseCoordinatorException>(() => second.ResyncAsync(new ResyncRequest(9, 0, [], new Dictionary<long, long>())).AsTask());
        var unordered = await Assert.ThrowsAsync<DseCoordinatorException>(() => second.ResyncAsync(new ResyncRequest(1, 0, [V(2), V(1)], new Dictionary<long, long>())).AsTask());

        Assert.Equal(CoordinatorErrorCode.FutureWorldLine, future.Code);
        Assert.Equal(CoordinatorErrorCode.UnknownParticipant, unknown.Code);
        Assert.Equal(CoordinatorErrorCode.InvalidRequest, unordered.Code);
        Assert.Equal(epoch, second.State.Epoch);
        Assert.True(second.State.IsRecovering);
    }

    [Fact]
    public async Task ResyncFromASupersededInstance_IsRefusedAndKeepsTheNewInstancesFragments()
    {
        var journal = new ListJournal();
        var first = await OpenAsync(journal);
        await first.ConnectAsync(Request(1));
        await first.ConnectAsync(Request(2));
        var second = await OpenAsync(journal);
        await second.ResyncAsync(new ResyncRequest(1, 0, [], new Dictionary<long, long>()));
        await second.ConnectAsync(Request(2));                     // 2 restarted while the coordinator was down
        var restarted = await second.ConnectAsync(Request(2));     // its retried connect: decision 1
        Assert.True(restarted.IsRestart);
        await second.ReportPersistedAsync(2, V(1, 1, new Dependency(1, 1)));   // waits for 1's version 1

        // The old instance of 2, still alive in world-line 0, resyncs late.
        var ex = await Assert.ThrowsAsync<DseCoordinatorException>(() => second.ResyncAsync(new ResyncRequest(2, 0, [], new Dictionary<long, long>())).AsTask());
        await second.ReportPersistedAsync(1, V(1, 1));

        Assert.Equal(CoordinatorErrorCode.Removed, ex.Code);
        Assert.Contains("superseded", ex.Message, StringComparison.Ordinal);
        Assert.Equal(1, second.State.CommittedVersion(2));   // the new instance's fragment was kept
    }

    [Fact]
    public async Task Decisions_AndAcknowledgements_SurviveTheCoordinator()
    {
        var journal = new ListJournal();
        var first = await OpenAsync(journal);
        await first.ConnectAsync(Request(1));
        await first.ConnectAsync(Request(2));
        await first.ReportPersistedAsync(2, V(1));
        await first.ConnectAsync(Request(1));                    // decision 1: cut of 2 is 1
        await first.AcknowledgeRollbackAsync(2, 1, 3);             // 2 kept its versions up to 3
        int before = journal.Appends;
        await first.AcknowledgeRollbackAsync(2, 1, 3);             // a repeated acknowledgement writes nothing
        Assert.Equal(before, journal.Appends);

        var second = await OpenAsync(journal);

        Assert.Equal(1, second.WorldLine);
        Assert.Single(second.State.Decisions);

        // 2's version 3 was persisted in world-line 0, above the cut, but 2 kept it: the resync keeps it too.
        await second.ResyncAsync(new ResyncRequest(1, 1, [], new Dictionary<long, long>()));
        await second.ResyncAsync(new ResyncRequest(2, 1, [V(2), V(3)], new Dictionary<long, long> { [2] = 1 }));
        Assert.Equal(3, second.State.CommittedVersion(2));
    }

    [Fact]
    public async Task Listing_StopsAtTheFirstVersionALaterDecisionRemoved()
    {
        var c = new ClusterCoordinator();
        await c.ConnectAsync(Request(1));
        await c.ConnectAsync(Request(2));
        await c.ReportPersistedAsync(2, V(1));
        await c.ConnectAsync(Request(1));   // decision 1: cut of 2 is 1; 2 never acknowledged keeping more

        // 2 restarts listing version 2 (world-line 0, above the cut: removed) and version 3 (world-line 1). Version 3
        // follows a removed version in 2's lineage, so it cannot survive either, whatever its own label says.
        var response = await c.ConnectAsync(Request(2, V(1), V(2), V(3, 1)));

        Assert.Equal(1, response.RestoreVersion);
    }

    [Fact]
    public async Task Listing_DropsAFragmentThatObservedStateALaterDecisionRemoved_EvenIfItsOwnerClaimsToHaveKeptIt()
    {
        var c = new ClusterCoordinator();
        await c.ConnectAsync(Request(1));
        await c.ConnectAsync(Request(2));
        await c.ReportPersistedAsync(2, V(1));
        await c.ReportPersistedAsync(1, V(1, 0, new Dependency(2, 5)));
        await c.ConnectAsync(Request(2, V(1)));       // decision 1: 2 keeps 1, so 1's version 1 (which saw 2's 5) goes
        await c.AcknowledgeRollbackAsync(1, 1, 3);    // an acknowledgement that contradicts the decision
        for (long v = 2; v <= 5; v++)
        {
            // 2 reuses the numbers 2..5 in world-line 1: a numeric check would call 1's dependency on 2's 5 satisfied.
            await c.ReportPersistedAsync(2, V(v, 1));
        }

        // The fragment's own number passes (it was "kept"), but what it observed did not survive: it is not believed.
        var response = await c.ConnectAsync(Request(1, V(1, 0, new Dependency(2, 5))));

        Assert.Equal(0, response.RestoreVersion);
    }

    [Fact]
    public async Task SilentParticipant_IsRemovedWithADecision_AndRefusedUntilItConnectsAgain()
    {
        var time = new FakeTimeProvider();
        var journal = new ListJournal();
        await using var c = await OpenAsync(journal, new ClusterCoordinatorOptions { HeartbeatTimeout = TimeSpan.FromSeconds(10), TimeProvider = time });
        await c.ConnectAsync(Request(1));
        await c.ConnectAsync(Request(2));
        await c.ReportPersistedAsync(2, V(1));
        await c.ReportPersistedAsync(1, V(1, 0, new Dependency(2, 2)));   // depends on 2's unreported version 2

        time.Advance(TimeSpan.FromSeconds(6));
        await c.HeartbeatAsync(1);
        Assert.Empty(await c.RemoveSilentParticipantsAsync());
        time.Advance(TimeSpan.FromSeconds(6));   // the heartbeat timer fires and removes 2

        Assert.Empty(await c.RemoveSilentParticipantsAsync());
        var decision = c.State.Decisions[^1];
        Assert.Equal(RollbackReason.Removed, decision.Reason);
        Assert.Equal(2, decision.FailedObjectId);
        Assert.Equal(1, decision.CutFor(2));
        Assert.Equal(0, decision.CutFor(1));
        Assert.IsType<RollbackDecidedEntry>(journal.Entries[^1]);
        var refused = await Assert.ThrowsAsync<DseCoordinatorException>(() => c.ReportPersistedAsync(2, V(2)).AsTask());
        Assert.Equal(CoordinatorErrorCode.Removed, refused.Code);
        Assert.Contains("heartbeat", refused.Message, StringComparison.Ordinal);
        var heartbeat = await Assert.ThrowsAsync<DseCoordinatorException>(() => c.HeartbeatAsync(2).AsTask());
        Assert.Equal(CoordinatorErrorCode.Removed, heartbeat.Code);

        var back = await c.ConnectAsync(Request(2, V(1)));
        Assert.True(back.IsRestart);
        Assert.Equal(1, back.RestoreVersion);
        await c.HeartbeatAsync(2);
    }

    [Fact]
    public async Task RemovedStateObject_FaultsWithAClearReason()
    {
        var time = new FakeTimeProvider();
        var c = new ClusterCoordinator(new ClusterCoordinatorOptions { HeartbeatTimeout = TimeSpan.FromSeconds(10), TimeProvider = time });
        var a = await TestCluster.ConnectAsync(c, 1);
        await TestCluster.ConnectAsync(c, 2);
        time.Advance(TimeSpan.FromSeconds(6));
        await c.HeartbeatAsync(2);
        time.Advance(TimeSpan.FromSeconds(6));   // the heartbeat timer removes 1

        var fault = await Assert.ThrowsAsync<DseFaultedException>(() => a.RefreshAsync().AsTask());
        Assert.Contains("removed", fault.Message, StringComparison.Ordinal);
    }

    [Fact]
    public async Task HeartbeatTimeouts_DoNotRemoveAnyoneDuringRecovery_ButAnOperatorCan()
    {
        var time = new FakeTimeProvider();
        var journal = new ListJournal();
        var options = new ClusterCoordinatorOptions { HeartbeatTimeout = TimeSpan.FromSeconds(10), TimeProvider = time };
        var first = await OpenAsync(journal, options);
        await first.ConnectAsync(Request(1));
        await first.ConnectAsync(Request(2));
        await first.DisposeAsync();
        await using var second = await OpenAsync(journal, options);

        time.Advance(TimeSpan.FromMinutes(5));
        Assert.Empty(await second.RemoveSilentParticipantsAsync());
        Assert.True(second.State.IsRecovering);

        await second.ResyncAsync(new ResyncRequest(1, 0, [], new Dictionary<long, long>()));
        Assert.True(await second.RemoveParticipantAsync(2));

        Assert.False(second.State.IsRecovering);
        Assert.Equal(RollbackReason.Removed, second.State.Decisions[^1].Reason);
        Assert.False(await second.RemoveParticipantAsync(2));
    }

    [Fact]
    public async Task JournalFailure_StopsTheCoordinator_WithAClearError()
    {
        var journal = new ListJournal();
        var c = await OpenAsync(journal);
        await c.ConnectAsync(Request(1));
        Assert.False(c.Faulted.IsCompleted);
        journal.FailNext = true;

        var ex = await Assert.ThrowsAsync<DseCoordinatorException>(() => c.ConnectAsync(Request(1)).AsTask());

        Assert.Equal(CoordinatorErrorCode.Unavailable, ex.Code);
        Assert.NotNull(c.Fault);
        Assert.True(c.Faulted.IsCompletedSuccessfully);
        var after = await Assert.ThrowsAsync<DseCoordinatorException>(() => c.ReportPersistedAsync(1, V(1)).AsTask());
        Assert.Equal(CoordinatorErrorCode.Unavailable, after.Code);
        Assert.Equal(0, c.WorldLine);
    }

    [Fact]
    public async Task StateObjects_FollowACoordinatorRestart_AndTheBoundaryMovesOn()
    {
        var journal = new ListJournal();
        var proxy = new CoordinatorProxy(await OpenAsync(journal));
        var a = MemoryStateObject.Create(1);
        var b = MemoryStateObject.Create(2);
        await a.ConnectAsync(proxy);
        await b.ConnectAsync(proxy);
        Assert.True(await TestCluster.ReceiveAsync(b, TestCluster.Send(a, 1), 2));
        await TestCluster.SettleAsync(a, b);
        long committedBefore = b.CommittedVersion;
        Assert.True(committedBefore > 0);

        proxy.Current = await OpenAsync(journal);
        Assert.True(await TestCluster.ReceiveAsync(b, TestCluster.Send(a, 3), 4));
        await TestCluster.SettleAsync(a, b);

        Assert.False(proxy.Current.State.IsRecovering);
        Assert.True(b.CommittedVersion > committedBefore);
        Assert.Equal(0, a.WorldLine);
    }

    [Fact]
    public async Task BackgroundLoops_SurviveCoordinatorCallsThatTimeOutAsCancellations()
    {
        var inner = new ClusterCoordinator();
        var flaky = new TimingOutCoordinator(inner);
        await using var a = MemoryStateObject.Create(1, background: true);
        await a.ConnectAsync(flaky);

        // Calls that outlive their deadline surface as cancellations the loops did not ask for: an outage, not a stop.
        flaky.Failing = true;
        Assert.True(a.TryStartLocalAction());
        a.Record(1);
        a.EndAction();
        await flaky.SeenFailures.Task.WaitAsync(TimeSpan.FromSeconds(30));
        flaky.Failing = false;

        while (true)
        {
            var next = a.NextChange;
            if (a.CommittedVersion >= 1)
            {
                break;
            }

            await next.WaitAsync(TimeSpan.FromSeconds(30));
        }

        Assert.Null(a.Fault);
    }

    // A coordinator crash while journaling a cold start leaves either no cold start (the next start is a cold start
    // again) or all of it (the next start filters against its decision); never registrations without the closure.
    [Theory]
    [InlineData(false)]
    [InlineData(true)]
    public async Task ColdStart_CoordinatorCrashesWhileJournaling_NeverRestoresStateThatDependsOnLostState(bool appendBecameDurable)
    {
        var options = new ClusterCoordinatorOptions { ExpectedParticipants = [1, 2] };
        var a = new ConnectRequest(1, []);                                                   // a lost its version 1
        var b = new ConnectRequest(2, [new VersionReport(1, 0, [new Dependency(1, 1)])]);   // b:1 observed a:1

        var journal = new FailingJournal { FailAppendNumber = 2, DurableDespiteFailure = appendBecameDurable };   // 1: started, 2: the cold start
        var first = await ClusterCoordinator.OpenAsync(journal, [], options);
        var ja = first.ConnectAsync(a).AsTask();
        await Assert.ThrowsAsync<DseCoordinatorException>(() => first.ConnectAsync(b).AsTask());
        await Assert.ThrowsAnyAsync<Exception>(() => ja);

        var second = await ClusterCoordinator.OpenAsync(journal, [.. journal.Entries], options);
        var ra = second.ConnectAsync(a).AsTask();
        var rb = await second.ConnectAsync(b);
        if (appendBecameDurable)
        {
            // The cold start happened: both answer the recovery, then connect again as restarts.
            Assert.True((await ra).MustRetry);
            Assert.True(rb.MustRetry);
            ra = second.ConnectAsync(a).AsTask();
            rb = await second.ConnectAsync(b);
        }

        Assert.Equal(0, rb.RestoreVersion);   // b:1 depends on a:1, which no storage holds
        Assert.Equal(0, (await ra).RestoreVersion);
    }

    /// <summary>A coordinator whose calls, while failing, end like a timed-out gRPC call on a channel that throws cancellations.</summary>
    private sealed class TimingOutCoordinator(ClusterCoordinator inner) : IDseCoordinator
    {
        private int _failures;

        public volatile bool Failing;

        public TaskCompletionSource SeenFailures { get; } = new(TaskCreationOptions.RunContinuationsAsynchronously);

        public ValueTask<ConnectResponse> ConnectAsync(ConnectRequest request, CancellationToken cancellationToken = default) => inner.ConnectAsync(request, cancellationToken);

        public ValueTask<ReportOutcome> ReportPersistedAsync(long objectId, VersionReport report, CancellationToken cancellationToken = default) =>
            Fail() ?? inner.ReportPersistedAsync(objectId, report, cancellationToken);

        public ValueTask AcknowledgeRollbackAsync(long objectId, long worldLine, long keptThrough, CancellationToken cancellationToken = default) => inner.AcknowledgeRollbackAsync(objectId, worldLine, keptThrough, cancellationToken);

        public ValueTask<ClusterState> ResyncAsync(ResyncRequest request, CancellationToken cancellationToken = default) => inner.ResyncAsync(request, cancellationToken);

        public async ValueTask HeartbeatAsync(long objectId, CancellationToken cancellationToken = default)
        {
            if (Fail() is { } failed)
            {
                await failed;
            }

            await inner.HeartbeatAsync(objectId, cancellationToken);
        }

        public ValueTask<ClusterState> GetStateAsync(CancellationToken cancellationToken = default) => inner.GetStateAsync(cancellationToken);

        public async ValueTask<ClusterState> WaitForChangeAsync(long knownEpoch, CancellationToken cancellationToken = default)
        {
            if (Fail() is { } failed)
            {
                await failed;
            }

            return await inner.WaitForChangeAsync(knownEpoch, cancellationToken);
        }

        private ValueTask<ReportOutcome>? Fail()
        {
            if (!Failing)
            {
                return null;
            }

            if (Interlocked.Increment(ref _failures) >= 5)
            {
                SeenFailures.TrySetResult();
            }

            return ValueTask.FromException<ReportOutcome>(new TaskCanceledException("the call's deadline passed"));
        }
    }

    /// <summary>A journal that survives coordinator instances and can fail its next append.</summary>
    private sealed class ListJournal : IClusterJournal
    {
        public List<ClusterJournalEntry> Entries { get; } = [];

        public int Appends { get; private set; }

        public bool FailNext { get; set; }

        public ValueTask AppendAsync(ClusterJournalEntry entry, CancellationToken cancellationToken = default)
        {
            if (FailNext)
            {
                FailNext = false;
                return ValueTask.FromException(new IOException("disk gone"));
            }

            Entries.Add(entry);
            Appends++;
            return ValueTask.CompletedTask;
        }
    }

    /// <summary>A journal whose n-th append fails, the entry durable or not.</summary>
    private sealed class FailingJournal : IClusterJournal
    {
        public List<ClusterJournalEntry> Entries { get; } = [];

        public int FailAppendNumber;   // 1-based; 0: never

        public bool DurableDespiteFailure;

        private int _appends;

        public ValueTask AppendAsync(ClusterJournalEntry entry, CancellationToken cancellationToken = default)
        {
            if (++_appends == FailAppendNumber)
            {
                if (DurableDespiteFailure)
                {
                    Entries.Add(entry);
                }

                return ValueTask.FromException(new IOException("coordinator crashed during the append"));
            }

            Entries.Add(entry);
            return ValueTask.CompletedTask;
        }
    }
}
