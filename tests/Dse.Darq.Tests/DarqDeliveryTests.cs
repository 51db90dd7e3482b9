namespace Dse.Darq.Tests;

/// <summary>OUT delivery between co-located DARQs: committed only, retried until acknowledged, deduplicated on arrival.</summary>
public sealed class DarqDeliveryTests
{
    /// <summary>A guard against a hang, not a timing assertion: every wait here ends on an event.</summary>
    private static readonly TimeSpan HangGuard = TimeSpan.FromSeconds(60);

    internal static Action<DarqOptions> Source(string name, IDarqDestinations destinations) => o =>
    {
        o.Name = name;
        o.Destinations = destinations;
        o.DeliveryRetryMinDelay = TimeSpan.FromMilliseconds(1);
        o.DeliveryRetryMaxDelay = TimeSpan.FromMilliseconds(5);
    };

    internal static Action<DarqOptions> Named(string name) => o => o.Name = name;

    [Fact]
    public async Task Deliver_CommittedOut_ArrivesOnceAndCountsAsCompleted()
    {
        using var guard = new CancellationTokenSource(HangGuard);
        var destinations = new TestDestinations();
        await using var b = await new DarqTestStorage().OpenAsync(Named("b"));
        destinations.Registry.Add(b);
        await using var a = await new DarqTestStorage().OpenAsync(Source("a", destinations));

        var processor = await a.RegisterProcessorAsync();
        var step = await processor.StepAsync(new DarqStep().AddOut("b", "x".Bytes()));
        Assert.Equal(1, a.PendingOutCount);

        await a.CommitAsync();
        await a.WaitForDeliveredAsync(step.OutLsns[0], guard.Token);

        Assert.Equal(0, a.PendingOutCount);
        Assert.Equal(1, destinations.Acknowledged);
        var received = (await b.RegisterProcessorAsync()).Drain();
        Assert.Equal([(DarqMessageKind.In, "x")], received.Select(m => (m.Kind, m.Text())));
        Assert.True((await b.ReceiveAsync(new DarqDelivery("a", step.OutLsns[0], "b", "x".Bytes()))).IsDuplicate);
    }

    [Fact]
    public async Task Deliver_UncommittedStep_DoesNotLeave()
    {
        using var guard = new CancellationTokenSource(HangGuard);
        var destinations = new TestDestinations();
        await using var b = await new DarqTestStorage().OpenAsync(Named("b"));
        destinations.Registry.Add(b);
        await using var a = await new DarqTestStorage().OpenAsync(Source("a", destinations));
        var processor = await a.RegisterProcessorAsync();
        var first = await processor.StepAsync(new DarqStep().AddOut("b", "1".Bytes()));
        await a.CommitAsync();
        await a.WaitForDeliveredAsync(first.OutLsns[0], guard.Token);

        // The commit that makes the second step deliverable happens before the third step: the third must not leave.
        var second = await processor.StepAsync(new DarqStep().AddOut("b", "2".Bytes()));
        await a.CommitAsync();
        var third = await processor.StepAsync(new DarqStep().AddOut("b", "3".Bytes()));
        await a.WaitForDeliveredAsync(second.OutLsns[0], guard.Token);
        Assert.Equal(2, destinations.Attempts);
        Assert.Equal(1, a.PendingOutCount);

        await a.CommitAsync();
        await a.WaitForDeliveredAsync(third.OutLsns[0], guard.Token);
        Assert.Equal(["1", "2", "3"], (await b.RegisterProcessorAsync()).Drain().Select(m => m.Text()));
    }

    [Fact]
    public async Task Deliver_UnknownDestinationThenAdded_StaysPendingThenArrivesOnce()
    {
        using var guard = new CancellationTokenSource(HangGuard);
        var destinations = new TestDestinations();
        await using var a = await new DarqTestStorage().OpenAsync(Source("a", destinations));
        var processor = await a.RegisterProcessorAsync();
        var step = await processor.StepAsync(new DarqStep().AddOut("b", "x".Bytes()));
        await a.CommitAsync();

        await destinations.Unknown.WaitAsync(guard.Token);
        Assert.Equal(1, a.PendingOutCount);
        Assert.Equal(step.OutLsns[0], await a.TruncateAsync());

        await using var b = await new DarqTestStorage().OpenAsync(Named("b"));
        destinations.Registry.Add(b);
        await a.WaitForDeliveredAsync(step.OutLsns[0], guard.Token);

        Assert.Equal(0, a.PendingOutCount);
        Assert.Equal(["x"], (await b.RegisterProcessorAsync()).Drain().Select(m => m.Text()));
    }

    [Fact]
    public async Task Deliver_SecondDestinationUnknown_DoesNotHoldBackTheFirst()
    {
        using var guard = new CancellationTokenSource(HangGuard);
        var destinations = new TestDestinations();
        await using var b = await new DarqTestStorage().OpenAsync(Named("b"));
        destinations.Registry.Add(b);
        await using var a = await new DarqTestStorage().OpenAsync(Source("a", destinations));
        var processor = await a.RegisterProcessorAsync();
        var step = await processor.StepAsync(new DarqStep().AddOut("nowhere", "lost?".Bytes()).AddOut("b", "x".Bytes()));
        await a.CommitAsync();

        await a.WaitForDeliveredAsync(step.OutLsns[1], guard.Token);
        Assert.Equal(1, a.PendingOutCount);
        Assert.Equal(["x"], (await b.RegisterProcessorAsync()).Drain().Select(m => m.Text()));
    }

    [Fact]
    public async Task Deliver_BothSidesOnGroupCommit_ArrivesWithoutExplicitCommits()
    {
        using var guard = new CancellationTokenSource(HangGuard);
        var destinations = new TestDestinations();
        await using var b = await new DarqTestStorage().OpenAsync(o => (o.Name, o.CommitInterval) = ("b", TimeSpan.FromMilliseconds(1)));
        destinations.Registry.Add(b);
        var source = Source("a", destinations);
        await using var a = await new DarqTestStorage().OpenAsync(o =>
        {
            source(o);
            o.CommitInterval = TimeSpan.FromMilliseconds(1);
        });

        var processor = await a.RegisterProcessorAsync();
        var step = await processor.StepAsync(new DarqStep().AddOut("b", "x".Bytes()));
        await a.WaitForDeliveredAsync(step.OutLsns[0], guard.Token);

        Assert.True(b.CommittedUntilAddress >= b.TailAddress);
        Assert.Equal(["x"], (await b.RegisterProcessorAsync()).Drain().Select(m => m.Text()));
    }
}
