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

        int calls = 0;
        var ran = new TaskCompletionSource<string>(TaskCreationOptions.RunContinuationsAsynchronously);
        var options = new DarqActivityRunnerOptions
        {
            Handlers =
            {
                ["charge"] = (activity, _) =>
                {
                    Interlocked.Increment(ref calls);
                    ran.TrySetResult(activity.IdempotencyToken);
                    return ValueTask.FromResult<ReadOnlyMemory<byte>>("charged".Bytes());
                },
            },
            Completer = (activity, result, completion) => completion.AddSelf(Encoding.UTF8.GetBytes($"completed {activity.IdempotencyToken}")),
            RetryMinDelay = TimeSpan.FromMilliseconds(1),
            RetryMaxDelay = TimeSpan.FromMilliseconds(4),
        };
        var processor = await b.RegisterProcessorAsync(guard.Token);
        await using var runner = new DarqActivityRunner(processor, options);

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
        Assert.False(ran.Task.IsCompleted, "the activity's handler ran before its entry was recoverable");
        Assert.Equal(0, Volatile.Read(ref calls));

        // A persists: the coordinator commits B's version (the one holding the step; no later version of B is needed),
        // and the handler runs, once.
        await a.DseStateObject.AdvanceVersionAsync(guard.Token);
        await barrier.WaitAsync(guard.Token);
        Assert.Equal($"b:{activityLsn}", await ran.Task.WaitAsync(guard.Token));
        var completion = await runner.WhenCompletedAsync(activityLsn).WaitAsync(guard.Token);

        Assert.Single(completion.SelfLsns);
        Assert.Equal(1, Volatile.Read(ref calls));
        Assert.Equal(0, runner.RunningCount);
        var rejected = await Assert.ThrowsAsync<DarqStepRejectedException>(() => processor.StepAsync(new DarqStep().Consume(activityLsn), guard.Token).AsTask());
        Assert.Equal(DarqStepRejection.AlreadyConsumed, rejected.Reason);
    }
}
