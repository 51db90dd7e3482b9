using System.Buffers.Binary;
using Dse.Darq.TestHost;
using Dse.Storage;
using Dse.Testing;
using FASTER.core;
using Xunit.Abstractions;

namespace Dse.Darq.Tests;

/// <summary>
/// Recovery on real devices, in process: a processor abandoned mid-stream and replaced, and a DARQ instance crashed (a
/// cut of both devices, then dropped without dispose while a new instance opens the same storage). The processor keeps
/// a running sum in one SELF message (<see cref="SumState"/>), consuming each IN message with its previous state.
/// Subclasses give the storage: local files, Azure page blobs.
/// </summary>
public abstract class DarqDeviceRecoveryTests : IAsyncLifetime
{
    private const long Producer = 3;

    /// <summary>Crashed instances, dropped without dispose; released (with their cut devices) when the test ends.</summary>
    private readonly List<Darq> _dropped = [];

    protected DarqDeviceRecoveryTests(ITestOutputHelper output) => Output = output;

    protected ITestOutputHelper Output { get; }

    [Fact]
    public async Task Register_ProcessorAbandonedMidStream_NewProcessorContinuesTheSumExactlyOnce()
    {
        const long count = 40;
        await using (var darq = await OpenAsync())
        {
            await EnqueueAsync(darq, 1, count);
            await darq.CommitAsync();

            var abandoned = await darq.RegisterProcessorAsync();
            var sum = new RunningSum(abandoned, count);
            var messages = abandoned.Drain();
            for (int i = 0; i < 15; i++)
            {
                await sum.StepAsync(messages[i]);
            }

            // No shutdown of any kind: the next processor registers while this one still holds unstepped messages.
            var replacement = await darq.RegisterProcessorAsync();
            var replay = replacement.Drain();
            Assert.Equal(DarqMessageKind.Self, replay[0].Kind);
            Assert.Equal((15L, 120L), (SumState.Decode(replay[0].Payload.Span).Count, SumState.Decode(replay[0].Payload.Span).Sum));
            Assert.Equal(Enumerable.Range(16, 25).Select(v => (long)v), replay.Skip(1).Select(m => BinaryPrimitives.ReadInt64LittleEndian(m.Payload.Span)));

            // The abandoned processor's next step is refused whole.
            await Assert.ThrowsAsync<DarqStaleIncarnationException>(() => sum.StepAsync(messages[15]));
            Assert.Equal(26, darq.UnconsumedCount);

            var next = new RunningSum(replacement, count);
            foreach (var message in replay)
            {
                await next.StepAsync(message);
            }

            Assert.Equal((count, count * (count + 1) / 2, 0L, 0L), next.Totals);
            await darq.CommitAsync();
        }

        await AssertFinalStateAsync(count, expectedIncarnation: 3);
    }

    [Fact]
    public async Task Reopen_CrashedAndDroppedWithoutDispose_RecoversTheLastCommitExactlyOnce()
    {
        const long count = 35;
        var crashed = await OpenCrashableAsync();
        await EnqueueAsync(crashed.Darq, 1, 30);
        var processor = await crashed.Darq.RegisterProcessorAsync();
        var sum = new RunningSum(processor, count);
        var messages = processor.Drain();
        for (int i = 0; i < 10; i++)
        {
            await sum.StepAsync(messages[i]);
        }

        await crashed.Darq.CommitAsync();

        // Not committed when the machine dies: ten more steps and five more enqueues.
        for (int i = 10; i < 20; i++)
        {
            await sum.StepAsync(messages[i]);
        }

        await EnqueueAsync(crashed.Darq, 31, count);
        await crashed.CrashAsync();

        await using (var darq = await OpenAsync())
        {
            // 1..30 were durable (duplicates now); 31..35 were lost and are taken again.
            for (long value = 1; value <= count; value++)
            {
                var result = await darq.EnqueueAsync(Producer, value, Value(value));
                Assert.Equal(value <= 30, result.IsDuplicate);
            }

            var recovered = await darq.RegisterProcessorAsync();
            Assert.Equal(2, recovered.Incarnation);
            var replay = recovered.Drain();
            Assert.Equal((10L, 55L), (SumState.Decode(replay[0].Payload.Span).Count, SumState.Decode(replay[0].Payload.Span).Sum));
            Assert.Equal(1 + 20 + 5, replay.Count);
            var next = new RunningSum(recovered, count);
            foreach (var message in replay)
            {
                await next.StepAsync(message);
            }

            Assert.Equal((count, count * (count + 1) / 2, 0L, 0L), next.Totals);
            await darq.CommitAsync();
        }

        await AssertFinalStateAsync(count, expectedIncarnation: 3);
    }

    [Fact]
    public async Task Reopen_CrashesAtSeededPointsWhileProducingAndStepping_EveryDurableValueSummedExactlyOnce()
    {
        const long count = 120;
        int seed = DarqSeed.Pick(Output, GetType().Name + "." + nameof(Reopen_CrashesAtSeededPointsWhileProducingAndStepping_EveryDurableValueSummedExactlyOnce));
        string replayHint = DarqSeed.Replay(seed, nameof(Reopen_CrashesAtSeededPointsWhileProducingAndStepping_EveryDurableValueSummedExactlyOnce));
        var random = new Random(seed);
        long durableUpTo = 0;
        for (int round = 0; round < 4; round++)
        {
            var crashed = await OpenCrashableAsync();
            var processor = await crashed.Darq.RegisterProcessorAsync();
            var sum = new RunningSum(processor, count);

            // The producer resends everything after its last durable acknowledgement; what else survived is a duplicate.
            long next = durableUpTo + 1;
            int operations = random.Next(10, 30);
            for (int op = 0; op < operations; op++)
            {
                switch (random.Next(3))
                {
                    case 0 when next <= count:
                        long last = Math.Min(count, next + random.Next(1, 8));
                        await EnqueueAsync(crashed.Darq, next, last);
                        next = last + 1;
                        break;
                    case 1:
                        await crashed.Darq.CommitAsync();
                        durableUpTo = next - 1;
                        break;
                    default:
                        foreach (var message in sum.Take(random.Next(1, 10)))
                        {
                            await sum.StepAsync(message);
                        }

                        break;
                }
            }

            Output.WriteLine($"round {round}: crash after {operations} operations, durable up to {durableUpTo}, sum state {sum.Totals}");
            await crashed.CrashAsync();
        }

        await using (var darq = await OpenAsync())
        {
            var processor = await darq.RegisterProcessorAsync();
            var sum = new RunningSum(processor, count);
            for (long value = durableUpTo + 1; value <= count; value++)
            {
                await darq.EnqueueAsync(Producer, value, Value(value));
            }

            foreach (var message in sum.Take(int.MaxValue))
            {
                await sum.StepAsync(message);
            }

            Assert.True(sum.Totals == (count, count * (count + 1) / 2, 0L, 0L), $"state (count, sum, duplicates, missing) = {sum.Totals}; {replayHint}");
            await darq.CommitAsync();
        }

        await AssertFinalStateAsync(count, expectedIncarnation: 6);
    }

    public virtual Task InitializeAsync() => Task.CompletedTask;

    public virtual async Task DisposeAsync()
    {
        foreach (var darq in _dropped)
        {
            // Its devices are cut: closing it now writes nothing.
            await darq.DisposeAsync();
        }
    }

    /// <summary>New log and commit devices over this test's storage (the same storage every time).</summary>
    [Fact]
    public async Task Deliver_PendingOutSpilledOnTheDevice_ArrivesInOrderAfterAReopen()
    {
        // 100 OUT messages written without destinations (no payload kept), then delivered by a reopened instance with a
        // budget of 0: every payload is read back from this device when it is sent.
        using var guard = new CancellationTokenSource(TimeSpan.FromSeconds(60));
        var lsns = new long[100];
        await using (var darq = await OpenAsync())
        {
            var processor = await darq.RegisterProcessorAsync();
            for (int i = 0; i < lsns.Length; i++)
            {
                lsns[i] = (await processor.StepAsync(new DarqStep().AddOut("sink", Value(i)))).OutLsns[0];
            }

            await darq.CommitAsync();
            Assert.Equal(lsns.Length, darq.SpilledOutCount);
        }

        var destinations = new TestDestinations();
        await using var sink = await new DarqTestStorage().OpenAsync(DarqDeliveryTests.Named("sink"));
        destinations.Registry.Add(sink);
        await using (var darq = await OpenAsync(o =>
        {
            DarqDeliveryTests.Source("test", destinations)(o);
            o.MaxBufferedOutBytes = 0;
        }))
        {
            await darq.WaitForDeliveredAsync(lsns[^1], guard.Token);
            Assert.Equal((0, 0L, 0), (darq.PendingOutCount, darq.BufferedOutBytes, darq.SpilledOutCount));
        }

        var received = (await sink.RegisterProcessorAsync()).Drain();
        Assert.Equal(Enumerable.Range(0, lsns.Length).Select(v => (long)v), received.Select(m => BinaryPrimitives.ReadInt64LittleEndian(m.Payload.Span)));
    }

    protected abstract (IDevice Log, IDevice Commit) CreateDevices();

    private static ReadOnlyMemory<byte> Value(long value)
    {
        var bytes = new byte[8];
        BinaryPrimitives.WriteInt64LittleEndian(bytes, value);
        return bytes;
    }

    private static async Task EnqueueAsync(Darq darq, long first, long last)
    {
        for (long value = first; value <= last; value++)
        {
            Assert.False((await darq.EnqueueAsync(Producer, value, Value(value))).IsDuplicate);
        }
    }

    private Task<Darq> OpenAsync(Action<DarqOptions>? configure = null)
    {
        var (log, commit) = CreateDevices();
        var options = DarqTestStorage.Options(log, commit);
        configure?.Invoke(options);
        return Darq.OpenAsync(options);
    }

    private async Task<Crashable> OpenCrashableAsync()
    {
        var (log, commit) = CreateDevices();
        var logFaults = new FaultInjectingDevice(log);
        var commitFaults = new FaultInjectingDevice(commit);
        var darq = await Darq.OpenAsync(DarqTestStorage.Options(logFaults, commitFaults));
        return new Crashable(this, darq, logFaults, commitFaults);
    }

    /// <summary>Reopens once more: the replay is exactly one SELF message with every value once, at the expected incarnation.</summary>
    private async Task AssertFinalStateAsync(long count, long expectedIncarnation)
    {
        await using var darq = await OpenAsync();
        var processor = await darq.RegisterProcessorAsync();
        Assert.Equal(expectedIncarnation, processor.Incarnation);
        var replay = processor.Drain();
        Assert.True(replay.Count == 1 && replay[0].Kind == DarqMessageKind.Self, $"replay holds {replay.Count} messages");
        var state = SumState.Decode(replay[0].Payload.Span);
        Assert.Equal((count, count * (count + 1) / 2, 0L, 0L), (state.Count, state.Sum, state.Duplicates, state.Missing));
    }

    /// <summary>An instance over fault-injecting devices; <see cref="CrashAsync"/> cuts both and drops it without dispose.</summary>
    private sealed class Crashable(DarqDeviceRecoveryTests owner, Darq darq, FaultInjectingDevice log, FaultInjectingDevice commit)
    {
        public Darq Darq { get; } = darq;

        public async Task CrashAsync()
        {
            commit.CutNow();   // the commit device first: no commit record may point at log pages the cut lost
            log.CutNow();
            owner._dropped.Add(Darq);

            // What the dead process's kernel would do: its local file locks go (page blob leases stay, to be broken).
            await Darq.ReleaseFencesAsProcessExitWouldAsync();
        }
    }

    /// <summary>A processor's running sum: each step consumes one IN message and the previous SELF state.</summary>
    private sealed class RunningSum(DarqProcessor processor, long bound)
    {
        private SumState _state = new(bound);
        private long _stateLsn = -1;

        public (long Count, long Sum, long Duplicates, long Missing) Totals => (_state.Count, _state.Sum, _state.Duplicates, _state.Missing);

        /// <summary>Up to <paramref name="limit"/> IN messages already streamed (SELF messages are taken as the state).</summary>
        public List<DarqMessage> Take(int limit)
        {
            var messages = new List<DarqMessage>();
            while (messages.Count < limit && processor.Messages.TryRead(out var message))
            {
                if (message.Kind == DarqMessageKind.Self)
                {
                    _state = SumState.Decode(message.Payload.Span);
                    _stateLsn = message.Lsn;
                }
                else
                {
                    messages.Add(message);
                }
            }

            return messages;
        }

        public async Task StepAsync(DarqMessage message)
        {
            if (message.Kind == DarqMessageKind.Self)
            {
                (_state, _stateLsn) = (SumState.Decode(message.Payload.Span), message.Lsn);
                return;
            }

            var next = SumState.Decode(_state.Encode());
            next.Apply(BinaryPrimitives.ReadInt64LittleEndian(message.Payload.Span));
            var step = new DarqStep().Consume(message).AddSelf(next.Encode());
            if (_stateLsn >= 0)
            {
                step.Consume(_stateLsn);
            }

            var result = await processor.StepAsync(step);
            (_state, _stateLsn) = (next, result.SelfLsns[0]);
        }
    }
}

/// <summary><see cref="DarqDeviceRecoveryTests"/> on local files.</summary>
[Trait("Category", "Recovery")]
public sealed class DarqLocalFileCrashRecoveryTests(ITestOutputHelper output) : DarqDeviceRecoveryTests(output)
{
    private readonly string _directory = Path.Combine(Path.GetTempPath(), "dse-darq-crash-" + Guid.NewGuid().ToString("N"));

    public override async Task DisposeAsync()
    {
        await base.DisposeAsync();
        if (Directory.Exists(_directory))
        {
            Directory.Delete(_directory, recursive: true);
        }
    }

    protected override (IDevice Log, IDevice Commit) CreateDevices() => (
        DseDevices.CreateLocalFile(Path.Combine(_directory, "darq.log")),
        DseDevices.CreateLocalFile(Path.Combine(_directory, "darq.commit")));
}

/// <summary><see cref="DarqDeviceRecoveryTests"/> on Azure page blobs (Azurite).</summary>
[Collection(DarqAzuriteCollection.Name)]
[Trait("Category", "Recovery")]
[Trait("Category", "Azure")]
public sealed class DarqPageBlobRecoveryTests(AzuriteFixture azurite, ITestOutputHelper output) : DarqDeviceRecoveryTests(output)
{
    private readonly string _container = "darq-rec-" + Guid.NewGuid().ToString("N");

    public override async Task DisposeAsync()
    {
        await base.DisposeAsync();
        await new Azure.Storage.Blobs.BlobContainerClient(azurite.ConnectionString, _container).DeleteIfExistsAsync();
    }

    protected override (IDevice Log, IDevice Commit) CreateDevices() => (
        DseDevices.CreateAzurePageBlob(azurite.ConnectionString, _container, "darq.log"),
        DseDevices.CreateAzurePageBlob(azurite.ConnectionString, _container, "darq.commit"));
}
