namespace Dse.Darq.Tests;

/// <summary>The speculation switch: with it off the processor sees only committed IN messages and OUT leaves only committed.</summary>
public sealed class DarqSpeculationModeTests
{
    private static readonly TimeSpan HangGuard = TimeSpan.FromSeconds(60);

    private static Action<DarqOptions> Mode(DarqSpeculationMode mode) => o => o.Speculation = mode;

    [Fact]
    public async Task Enqueue_SpeculationOff_ProcessorSeesNothingUntilCommit()
    {
        await using var darq = await new DarqTestStorage().OpenAsync(Mode(DarqSpeculationMode.Off));
        var processor = await darq.RegisterProcessorAsync();
        await darq.EnqueueAsync("a".Bytes());
        await darq.EnqueueAsync("b".Bytes());

        Assert.Empty(processor.Drain());

        await darq.CommitAsync();
        Assert.Equal(["a", "b"], processor.Drain().Select(m => m.Text()));
    }

    [Fact]
    public async Task Enqueue_IntraParticipantDefault_ProcessorSeesUncommittedAtOnce()
    {
        await using var darq = await new DarqTestStorage().OpenAsync();
        var processor = await darq.RegisterProcessorAsync();
        await darq.EnqueueAsync("a".Bytes());

        Assert.True(darq.CommittedUntilAddress < darq.TailAddress);
        Assert.Equal(["a"], processor.Drain().Select(m => m.Text()));
    }

    [Fact]
    public async Task Enqueue_SpeculationOffWithGroupCommit_ProcessorSeesMessageAfterBackgroundCommit()
    {
        using var guard = new CancellationTokenSource(HangGuard);
        await using var darq = await new DarqTestStorage().OpenAsync(o =>
        {
            o.Speculation = DarqSpeculationMode.Off;
            o.CommitInterval = TimeSpan.FromMilliseconds(2);
        });
        var processor = await darq.RegisterProcessorAsync();
        var result = await darq.EnqueueAsync("a".Bytes());

        var message = await processor.Messages.ReadAsync(guard.Token);
        Assert.Equal(result.Lsn, message.Lsn);
        Assert.True(darq.CommittedUntilAddress >= result.DurableAt);
    }

    [Fact]
    public async Task Register_SpeculationOff_ReplayIsReleasedByTheRegistrationCommit()
    {
        await using var darq = await new DarqTestStorage().OpenAsync(Mode(DarqSpeculationMode.Off));
        await darq.EnqueueAsync("a".Bytes());

        var processor = await darq.RegisterProcessorAsync();
        var replay = processor.Drain();

        Assert.Equal(["a"], replay.Select(m => m.Text()));
        Assert.True(replay[0].IsReplay);
        await darq.EnqueueAsync("b".Bytes());
        Assert.Empty(processor.Drain());
    }

    [Fact]
    public async Task Step_SpeculationOff_OutLeavesOnlyOnceCommitted()
    {
        using var guard = new CancellationTokenSource(HangGuard);
        var destinations = new TestDestinations();
        await using var b = await new DarqTestStorage().OpenAsync(DarqDeliveryTests.Named("b"));
        destinations.Registry.Add(b);
        await using var a = await new DarqTestStorage().OpenAsync(o =>
        {
            DarqDeliveryTests.Source("a", destinations)(o);
            o.Speculation = DarqSpeculationMode.Off;
        });
        var processor = await a.RegisterProcessorAsync();
        var step = await processor.StepAsync(new DarqStep().AddOut("b", "x".Bytes()));
        Assert.Equal(0, destinations.Attempts);

        await a.CommitAsync();
        await a.WaitForDeliveredAsync(step.OutLsns[0], guard.Token);
        Assert.Equal(1, destinations.Acknowledged);
    }

    [Fact]
    public async Task Open_UndefinedSpeculationMode_ThrowsNamingTheOption()
    {
        var storage = new DarqTestStorage();
        var error = await Assert.ThrowsAsync<ArgumentOutOfRangeException>(() => storage.OpenAsync(o => o.Speculation = (DarqSpeculationMode)7));

        Assert.Equal("Speculation", error.ParamName);
        Assert.Contains("DarqOptions.Speculation", error.Message, StringComparison.Ordinal);
    }
}
