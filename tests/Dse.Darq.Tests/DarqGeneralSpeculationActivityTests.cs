using System.Text;

namespace Dse.Darq.Tests;

/// <summary>
/// Activities under general speculation: a committed log entry can still be voided by a rollback (and its LSN reused), so
/// the runner starts an activity's handler only once its entry is inside the recoverable boundary.
/// </summary>
public sealed class DarqGeneralSpeculationActivityTests
{
    private static readonly TimeSpan HangGuard = TimeSpan.FromSeconds(60);

    [Fact]
    public async Task RunActivity_General_HandlerWaitsForTheCoordinatorCommitThenRunsOnce()
    {
        using var guard = new CancellationTokenSource(HangGuard);
        var coordinator = new ClusterCoordinator();
        await using var a = await new DarqTestStorage().OpenAsync(DarqGeneralSpeculationTests.General("a", 1, coordinator));
        await using var b = await new DarqTestStorage().OpenAsync(DarqGeneralSpeculationTests.General("b", 2, coordinator));

        // B's version depends on A's: B cannot commit it before A persists.
        await a.EnqueueAsync("x".Bytes(), guard.Token);
        await a.DseStateObject!.StartLocalActionAsync(guard.Token);
        var fromA = a.DseStateObject.EndAction();
        await b.ReceiveSpeculativeAsync(new DarqDelivery("a", 1, "b", "from-a".Bytes()) { DseHeader = fromA.ToArray() }, guard.Token);

        var handler = new CountingHandler();
        var processor = await b.RegisterProcessorAsync(guard.Token);
        await using var runner = new DarqActivityRunner(processor, Options(handler));

        var recorded = await runner.StepAsync(new DarqStep().AddActivity("charge", "42".Bytes()), guard.Token);
        long activityLsn = recorded.SelfLsns[0];

        // B persists its version: the activity's entry is committed to B's log (enough without speculation), but the
        // version waits for A's, so the entry is not recoverable yet and the handler must not run.
        await b.DseStateObject!.AdvanceVersionAsync(guard.Token);
        await b.WaitForCommitAsync(recorded.DurableAt, guard.Token);
        var barrier = b.WaitForRecoverableAsync(activityLsn, guard.Token).AsTask();
        Assert.True(b.CommittedUntilAddress >= recorded.DurableAt);
        Assert.True(b.DseStateObject.CommittedVersion < 1);
        Assert.False(barrier.IsCompleted);
        Assert.False(handler.Ran.IsCompleted, "the activity's handler ran before its entry was recoverable");
        Assert.Equal(0, handler.Calls);

        // A persists: the coordinator commits B's version (the one holding the step; no later version of B is needed),
        // and the handler runs, once.
        await a.DseStateObject.AdvanceVersionAsync(guard.Token);
        await barrier.WaitAsync(guard.Token);
        Assert.Equal($"b:{activityLsn}", await handler.Ran.WaitAsync(guard.Token));
        var completion = await runner.WhenCompletedAsync(activityLsn).WaitAsync(guard.Token);

        Assert.Single(completion.SelfLsns);
        Assert.Equal(1, handler.Calls);
        Assert.Equal(0, runner.RunningCount);
        var rejected = await Assert.ThrowsAsync<DarqStepRejectedException>(() => processor.StepAsync(new DarqStep().Consume(activityLsn), guard.Token).AsTask());
        Assert.Equal(DarqStepRejection.AlreadyConsumed, rejected.Reason);
    }

    [Fact]
    [Trait("Category", "Recovery")]
    public async Task RunActivity_General_EntryRolledBackBeforeRecoverable_HandlerNeverRuns()
    {
        using var guard = new CancellationTokenSource(HangGuard);
        var coordinator = new ClusterCoordinator();
        var aStorage = new DarqTestStorage();
        await using var b = await new DarqTestStorage().OpenAsync(DarqGeneralSpeculationTests.General("b", 2, coordinator));
        var handler = new CountingHandler();
        var processor = await b.RegisterProcessorAsync(guard.Token);
        await using var runner = new DarqActivityRunner(processor, Options(handler));
        long activityLsn;
        await using (var a = await aStorage.OpenAsync(DarqGeneralSpeculationTests.General("a", 1, coordinator)))
        {
            // B's version (which records the activity) depends on A's, which never persists.
            await a.EnqueueAsync("x".Bytes(), guard.Token);
            await a.DseStateObject!.StartLocalActionAsync(guard.Token);
            var fromA = a.DseStateObject.EndAction();
            await b.ReceiveSpeculativeAsync(new DarqDelivery("a", 1, "b", "from-a".Bytes()) { DseHeader = fromA.ToArray() }, guard.Token);
            activityLsn = (await runner.StepAsync(new DarqStep().AddActivity("charge", "42".Bytes()), guard.Token)).SelfLsns[0];
            await b.DseStateObject!.AdvanceVersionAsync(guard.Token);
            aStorage.CrashNow();
        }

        // A restarts on what survived: B rolls back past the activity, whose run ends without calling the handler.
        await using var a2 = await aStorage.OpenAsync(DarqGeneralSpeculationTests.General("a", 1, coordinator));
        await b.DseStateObject.RefreshAsync(guard.Token);
        Assert.Equal(1, b.DseStateObject.WorldLine);
        var ended = await Assert.ThrowsAnyAsync<Exception>(() => runner.WhenCompletedAsync(activityLsn).WaitAsync(guard.Token));

        Assert.IsType<DseRolledBackException>(ended);
        Assert.Equal(0, handler.Calls);
        Assert.False(handler.Ran.IsCompleted);
        Assert.Equal(0, runner.RunningCount);
        Assert.Empty((await b.RegisterProcessorAsync(guard.Token)).Drain());
    }

    private static DarqActivityRunnerOptions Options(CountingHandler handler) => new()
    {
        Handlers = { ["charge"] = handler.RunAsync },
        Completer = (activity, result, completion) => completion.AddSelf(Encoding.UTF8.GetBytes($"completed {activity.IdempotencyToken}")),
        RetryMinDelay = TimeSpan.FromMilliseconds(1),
        RetryMaxDelay = TimeSpan.FromMilliseconds(4),
    };

    /// <summary>An activity handler that counts its calls and signals the first one with the activity's token.</summary>
    private sealed class CountingHandler
    {
        private readonly TaskCompletionSource<string> _ran = new(TaskCreationOptions.RunContinuationsAsynchronously);
        private int _calls;

        public Task<string> Ran => _ran.Task;

        public int Calls => Volatile.Read(ref _calls);

        public ValueTask<ReadOnlyMemory<byte>> RunAsync(DarqActivity activity, CancellationToken cancellationToken)
        {
            Interlocked.Increment(ref _calls);
            _ran.TrySetResult(activity.IdempotencyToken);
            return ValueTask.FromResult<ReadOnlyMemory<byte>>("charged".Bytes());
        }
    }
}
