using System.Text;

namespace Dse.Darq.Tests;

/// <summary>Activities: run with the activity's LSN as idempotency token, retried, completed by a later step.</summary>
public sealed class DarqActivityTests
{
    private static readonly TimeSpan Timeout = TimeSpan.FromSeconds(30);

    /// <summary>An external service that deduplicates by idempotency token and counts its effects per token.</summary>
    private sealed class FakeExternalService
    {
        private readonly Lock _lock = new();
        private readonly Dictionary<string, int> _effects = [];
        private readonly Dictionary<string, int> _calls = [];
        private readonly Dictionary<string, string> _results = [];

        public string Perform(string token, string input)
        {
            lock (_lock)
            {
                _calls[token] = _calls.GetValueOrDefault(token) + 1;
                if (_results.TryGetValue(token, out string? earlier))
                {
                    return earlier;
                }

                _effects[token] = _effects.GetValueOrDefault(token) + 1;
                string result = $"done:{input}";
                _results[token] = result;
                return result;
            }
        }

        public int Effects(string token)
        {
            lock (_lock)
            {
                return _effects.GetValueOrDefault(token);
            }
        }

        public int Calls(string token)
        {
            lock (_lock)
            {
                return _calls.GetValueOrDefault(token);
            }
        }

        public int TotalEffects
        {
            get
            {
                lock (_lock)
                {
                    return _effects.Values.Sum();
                }
            }
        }
    }

    private static DarqActivityRunnerOptions Options(DarqActivityHandler charge) => new()
    {
        Handlers = { ["charge"] = charge },
        Completer = (activity, result, completion) => completion.AddSelf(Encoding.UTF8.GetBytes($"completed {activity.IdempotencyToken} {Encoding.UTF8.GetString(result.Span)}")),
        RetryMinDelay = TimeSpan.FromMilliseconds(1),
        RetryMaxDelay = TimeSpan.FromMilliseconds(4),
    };

    private static DarqActivityHandler Charging(FakeExternalService service)
        => (activity, _) => ValueTask.FromResult<ReadOnlyMemory<byte>>(Encoding.UTF8.GetBytes(service.Perform(activity.IdempotencyToken, Encoding.UTF8.GetString(activity.Input.Span))));

    /// <summary>Performs the effect, then hangs (until cancelled) as if the processor died before completing.</summary>
    private static DarqActivityHandler PerformThenHang(FakeExternalService service, TaskCompletionSource<string> performed) => async (activity, token) =>
    {
        service.Perform(activity.IdempotencyToken, Encoding.UTF8.GetString(activity.Input.Span));
        performed.TrySetResult(activity.IdempotencyToken);
        await Task.Delay(System.Threading.Timeout.InfiniteTimeSpan, token);
        throw new InvalidOperationException("unreachable");
    };

    [Fact]
    public async Task StepAsync_RecordsActivity_RunsItWithItsTokenAndCompletesIt()
    {
        var service = new FakeExternalService();
        await using var darq = await new DarqTestStorage().OpenAsync();
        var processor = await darq.RegisterProcessorAsync();
        await using var runner = new DarqActivityRunner(processor, Options(Charging(service)));
        var order = await darq.EnqueueAsync("order".Bytes());

        var recorded = await runner.StepAsync(new DarqStep().Consume(order.Lsn).AddSelf("state".Bytes()).AddActivity("charge", "42".Bytes()));
        long activity = recorded.SelfLsns[1];
        var completion = await runner.WhenCompletedAsync(activity).WaitAsync(Timeout);

        string token = $"test:{activity}";
        Assert.Equal(1, service.Effects(token));
        Assert.Equal(2, darq.UnconsumedCount); // "state" and the completion's SELF message
        var rejected = await Assert.ThrowsAsync<DarqStepRejectedException>(() => processor.StepAsync(new DarqStep().Consume(activity)).AsTask());
        Assert.Equal(DarqStepRejection.AlreadyConsumed, rejected.Reason);
        Assert.Equal(0, runner.RunningCount);
        Assert.Single(completion.SelfLsns);
    }

    [Fact]
    [Trait("Category", "Recovery")]
    public async Task TryStart_AfterProcessorRestartMidActivity_EffectHappensExactlyOnce()
    {
        var service = new FakeExternalService();
        var performed = new TaskCompletionSource<string>(TaskCreationOptions.RunContinuationsAsynchronously);
        await using var darq = await new DarqTestStorage().OpenAsync();
        var first = await darq.RegisterProcessorAsync();
        var firstRunner = new DarqActivityRunner(first, Options(PerformThenHang(service, performed)));
        long activity = (await firstRunner.StepAsync(new DarqStep().AddActivity("charge", "42".Bytes()))).SelfLsns[0];
        string token = await performed.Task.WaitAsync(Timeout);

        // The processor restarts between the external effect and the completion step.
        var second = await darq.RegisterProcessorAsync();
        await using var secondRunner = new DarqActivityRunner(second, Options(Charging(service)));
        var replay = second.Drain();
        Assert.True(secondRunner.TryStart(Assert.Single(replay)));
        await secondRunner.WhenCompletedAsync(activity).WaitAsync(Timeout);

        Assert.Equal($"test:{activity}", token);
        Assert.Equal(2, service.Calls(token));
        Assert.Equal(1, service.Effects(token));
        Assert.Equal(1, service.TotalEffects);

        // The old runner's run ends without completing anything.
        await firstRunner.DisposeAsync();
        await Assert.ThrowsAnyAsync<OperationCanceledException>(() => firstRunner.WhenCompletedAsync(activity).WaitAsync(Timeout));
        Assert.Equal(1, darq.UnconsumedCount);
    }

    [Fact]
    public async Task WhenCompletedAsync_ProcessorSupersededBeforeCompletion_FailsStaleAndCompletesNothing()
    {
        var service = new FakeExternalService();
        var release = new TaskCompletionSource(TaskCreationOptions.RunContinuationsAsynchronously);
        await using var darq = await new DarqTestStorage().OpenAsync();
        var first = await darq.RegisterProcessorAsync();
        await using var runner = new DarqActivityRunner(first, Options(async (activity, token) =>
        {
            await release.Task.WaitAsync(token);
            return Encoding.UTF8.GetBytes(service.Perform(activity.IdempotencyToken, "x"));
        }));
        long activity = (await runner.StepAsync(new DarqStep().AddActivity("charge", "x".Bytes()))).SelfLsns[0];

        await darq.RegisterProcessorAsync();
        release.SetResult();

        await Assert.ThrowsAsync<DarqStaleIncarnationException>(() => runner.WhenCompletedAsync(activity).WaitAsync(Timeout));
        Assert.Equal(1, darq.UnconsumedCount);
    }

    [Fact]
    [Trait("Category", "Recovery")]
    public async Task TryStart_AfterDarqReopenMidActivity_EffectHappensExactlyOnce()
    {
        var service = new FakeExternalService();
        var storage = new DarqTestStorage();
        long activity;
        string token;
        await using (var darq = await storage.OpenAsync())
        {
            var processor = await darq.RegisterProcessorAsync();
            var performed = new TaskCompletionSource<string>(TaskCreationOptions.RunContinuationsAsynchronously);
            await using var runner = new DarqActivityRunner(processor, Options(PerformThenHang(service, performed)));
            var order = await darq.EnqueueAsync("order".Bytes());
            activity = (await runner.StepAsync(new DarqStep().Consume(order.Lsn).AddActivity("charge", "42".Bytes()))).SelfLsns[0];
            token = await performed.Task.WaitAsync(Timeout);

            // The DARQ crashes after the effect: the runner committed the activity before running it.
            storage.CrashNow();
        }

        await using (var reopened = await storage.OpenAsync())
        {
            var processor = await reopened.RegisterProcessorAsync();
            await using var runner = new DarqActivityRunner(processor, Options(Charging(service)));
            var message = Assert.Single(processor.Drain());
            Assert.Equal((activity, DarqMessageKind.Activity, true), (message.Lsn, message.Kind, message.IsReplay));
            Assert.Equal(token, DarqActivity.FromMessage(message, reopened.Name).IdempotencyToken);
            Assert.True(runner.TryStart(message));
            await runner.WhenCompletedAsync(activity).WaitAsync(Timeout);
            await reopened.CommitAsync();
        }

        Assert.Equal(2, service.Calls(token));
        Assert.Equal(1, service.Effects(token));

        await using var again = await storage.OpenAsync();
        var last = await again.RegisterProcessorAsync();
        Assert.Equal([$"completed {token} done:42"], last.Drain().Select(m => m.Text()));
    }

    [Fact]
    public async Task Runner_HandlerFailsTwice_RetriesWithTheSameTokenAndCompletes()
    {
        var service = new FakeExternalService();
        var tokens = new List<string>();
        await using var darq = await new DarqTestStorage().OpenAsync();
        var processor = await darq.RegisterProcessorAsync();
        await using var runner = new DarqActivityRunner(processor, Options((activity, _) =>
        {
            lock (tokens)
            {
                tokens.Add(activity.IdempotencyToken);
                if (tokens.Count <= 2)
                {
                    throw new IOException($"service unavailable (attempt {tokens.Count})");
                }
            }

            return ValueTask.FromResult<ReadOnlyMemory<byte>>(Encoding.UTF8.GetBytes(service.Perform(activity.IdempotencyToken, "7")));
        }));

        long activity = (await runner.StepAsync(new DarqStep().AddActivity("charge", "7".Bytes()))).SelfLsns[0];
        await runner.WhenCompletedAsync(activity).WaitAsync(Timeout);

        Assert.Equal(Enumerable.Repeat($"test:{activity}", 3), tokens);
        Assert.Equal(1, service.Effects($"test:{activity}"));
    }

    [Fact]
    public async Task Runner_HandlerKeepsFailingAfterSupersede_StopsRetryingWithStale()
    {
        var failed = new TaskCompletionSource(TaskCreationOptions.RunContinuationsAsynchronously);
        await using var darq = await new DarqTestStorage().OpenAsync();
        var first = await darq.RegisterProcessorAsync();
        await using var runner = new DarqActivityRunner(first, Options((_, _) =>
        {
            failed.TrySetResult();
            throw new IOException("service down");
        }));
        long activity = (await runner.StepAsync(new DarqStep().AddActivity("charge", "x".Bytes()))).SelfLsns[0];
        await failed.Task.WaitAsync(Timeout);

        await darq.RegisterProcessorAsync();

        await Assert.ThrowsAsync<DarqStaleIncarnationException>(() => runner.WhenCompletedAsync(activity).WaitAsync(Timeout));
        Assert.Equal(0, runner.RunningCount);
        Assert.Equal(1, darq.UnconsumedCount);
    }

    [Fact]
    public async Task StepBatchAsync_RecordsActivitiesInSeveralSteps_RunsEachOnceAndCompletesIt()
    {
        var service = new FakeExternalService();
        await using var darq = await new DarqTestStorage().OpenAsync();
        var processor = await darq.RegisterProcessorAsync();
        await using var runner = new DarqActivityRunner(processor, Options(Charging(service)));
        var first = await darq.EnqueueAsync("order 1".Bytes());
        var second = await darq.EnqueueAsync("order 2".Bytes());

        var recorded = await runner.StepBatchAsync(
        [
            new DarqStep().Consume(first.Lsn).AddActivity("charge", "1".Bytes()),
            new DarqStep().Consume(second.Lsn).AddSelf("state".Bytes()).AddActivity("charge", "2".Bytes()),
        ]);
        long[] activities = [recorded[0].SelfLsns[0], recorded[1].SelfLsns[1]];
        foreach (long activity in activities)
        {
            await runner.WhenCompletedAsync(activity).WaitAsync(Timeout);
            Assert.Equal(1, service.Effects($"test:{activity}"));
        }

        Assert.Equal(2, service.TotalEffects);
        Assert.Equal(0, runner.RunningCount);
    }

    [Fact]
    public async Task StepBatchAsync_UnknownActivityNameInALaterStep_IsAClearErrorAndAppendsNothing()
    {
        await using var darq = await new DarqTestStorage().OpenAsync();
        var processor = await darq.RegisterProcessorAsync();
        await using var runner = new DarqActivityRunner(processor, Options(Charging(new FakeExternalService())));
        var order = await darq.EnqueueAsync("order".Bytes());
        long tail = darq.TailAddress;

        var unknown = await Assert.ThrowsAsync<ArgumentException>(() => runner.StepBatchAsync(
        [
            new DarqStep().Consume(order.Lsn).AddActivity("charge", "1".Bytes()),
            new DarqStep().AddActivity("refund", "1".Bytes()),
        ]).AsTask());

        Assert.Contains("'refund'", unknown.Message, StringComparison.Ordinal);
        Assert.Equal(tail, darq.TailAddress);
        Assert.Equal(1, darq.UnconsumedCount);
    }

    [Fact]
    public async Task StepAsync_UnknownActivityName_IsAClearErrorAndAppendsNothing()
    {
        await using var darq = await new DarqTestStorage().OpenAsync();
        var processor = await darq.RegisterProcessorAsync();
        await using var runner = new DarqActivityRunner(processor, Options(Charging(new FakeExternalService())));
        var order = await darq.EnqueueAsync("order".Bytes());
        long tail = darq.TailAddress;

        var unknown = await Assert.ThrowsAsync<ArgumentException>(
            () => runner.StepAsync(new DarqStep().Consume(order.Lsn).AddActivity("refund", "1".Bytes())).AsTask());

        Assert.Contains("'refund'", unknown.Message, StringComparison.Ordinal);
        Assert.Equal(tail, darq.TailAddress);
        Assert.Equal(1, darq.UnconsumedCount);
    }

    [Fact]
    public async Task TryStart_ReplayedActivityWithUnknownName_IsAClearErrorAndStaysPending()
    {
        await using var darq = await new DarqTestStorage().OpenAsync();
        var first = await darq.RegisterProcessorAsync();
        long activity = (await first.StepAsync(new DarqStep().AddActivity("refund", "1".Bytes()))).SelfLsns[0];
        var second = await darq.RegisterProcessorAsync();
        await using var runner = new DarqActivityRunner(second, Options(Charging(new FakeExternalService())));

        var unknown = Assert.Throws<InvalidOperationException>(() => runner.TryStart(Assert.Single(second.Drain())));

        Assert.Contains("'refund'", unknown.Message, StringComparison.Ordinal);
        Assert.Contains(activity.ToString(System.Globalization.CultureInfo.InvariantCulture), unknown.Message, StringComparison.Ordinal);
        Assert.Equal(0, runner.RunningCount);
        Assert.Equal(1, darq.UnconsumedCount);
        Assert.False(runner.TryStart(new DarqMessage(1, DarqMessageKind.In, default, IsReplay: false)));
    }

    [Fact]
    public async Task Runner_InvalidOptionsOrActivityName_AreRefused()
    {
        await using var darq = await new DarqTestStorage().OpenAsync();
        var processor = await darq.RegisterProcessorAsync();

        var noCompleter = Options(Charging(new FakeExternalService()));
        noCompleter.Completer = null;
        Assert.Equal("Completer", Assert.Throws<ArgumentException>(() => new DarqActivityRunner(processor, noCompleter)).ParamName);
        Assert.Equal("Handlers", Assert.Throws<ArgumentException>(() => new DarqActivityRunner(processor, new DarqActivityRunnerOptions
        {
            Completer = (_, _, _) => { },
        })).ParamName);
        Assert.Throws<ArgumentException>(() => new DarqStep().AddActivity("", "x".Bytes()));
        Assert.Throws<ArgumentException>(() => new DarqStep().AddActivity(new string('n', 257), "x".Bytes()));
        Assert.Throws<ArgumentException>(() => DarqActivity.FromMessage(new DarqMessage(1, DarqMessageKind.Self, "x".Bytes(), IsReplay: true), darq.Name));
    }

    [Fact]
    public async Task ReusedStep_AfterAnActivity_ItsNextSelfMessageIsPlain()
    {
        // A processor may reuse one DarqStep for every step (Clear()); an activity of an earlier step must not mark the
        // SELF message that later takes its index.
        var storage = new DarqTestStorage();
        long activity, plain;
        await using (var darq = await storage.OpenAsync())
        {
            var processor = await darq.RegisterProcessorAsync();
            var step = new DarqStep().AddActivity("charge", "42".Bytes());
            activity = (await processor.StepAsync(step)).SelfLsns[0];
            plain = (await processor.StepAsync(step.Clear().AddSelf("state".Bytes()))).SelfLsns[0];
            Assert.False(step.HasActivities);
            await darq.CommitAsync();
        }

        await using var reopened = await storage.OpenAsync();
        var registered = await reopened.RegisterProcessorAsync();
        var replay = registered.Drain().ToDictionary(message => message.Lsn);
        Assert.Equal(DarqMessageKind.Activity, replay[activity].Kind);
        Assert.Equal(DarqMessageKind.Self, replay[plain].Kind);
        Assert.Equal("state", replay[plain].Text());
    }
}
