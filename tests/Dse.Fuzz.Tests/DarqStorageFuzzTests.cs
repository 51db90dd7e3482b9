using Dse.Darq;
using Dse.Storage;
using Xunit.Abstractions;

namespace Dse.Fuzz.Tests;

/// <summary>
/// DARQ recovery (docs/darq-format.md, "Recovery") on damaged devices: a DARQ runs a seeded workload (plain and
/// deduplicated enqueues, steps with SELF and OUT entries, checkpoints, discards, commits), then bytes of its log or
/// commit device are damaged and it is reopened. The open refuses with <see cref="InvalidDataException"/> and writes
/// nothing, or recovers exactly the state of one of its commits (an older one when the newest commit record is damaged,
/// the empty state when none is left) and goes on working.
/// </summary>
[Trait("Category", "Fuzz")]
public sealed class DarqStorageFuzzTests(ITestOutputHelper output)
{
    private const long PageSize = 1 << 16;
    internal const long SegmentSize = 1 << 17;
    private static readonly long[] Producers = [11, 12, 13];

    [Fact]
    public async Task Open_DamagedLogOrCommitDevice_RecoversACommittedStateOrRefuses()
    {
        var run = FuzzRun.Start($"{nameof(DarqStorageFuzzTests)}.{nameof(Open_DamagedLogOrCommitDevice_RecoversACommittedStateOrRefuses)}", output, defaultInputs: 200);
        await run.RunAsync(async (seed, random) =>
        {
            var log = new InMemoryStorage();
            var commits = new InMemoryStorage();
            var states = new List<string>();
            await using (var darq = await OpenAsync(log, commits))
            {
                states.Add(await StateAsync(darq, new Model()));
                await RunWorkloadAsync(darq, random, states);
            }

            // Damage one device (sometimes both) as a flat image, and reopen on the damaged copy.
            var logImage = DeviceImage.Read(log, SegmentSize);
            var commitImage = DeviceImage.Read(commits, SegmentSize);
            int target = random.Next(5);
            string how = "";
            if (target is 0 or 1 or 4)
            {
                (logImage, string logHow) = Mutations.Next(random, [logImage], maxRandomLength: 4096);
                how += $"log: {logHow}; ";
            }

            if (target is 2 or 3 or 4)
            {
                (commitImage, string commitHow) = Mutations.Next(random, [commitImage], maxRandomLength: 4096);
                how += $"commit device: {commitHow}; ";
            }

            var damagedLog = DeviceImage.Write(logImage, SegmentSize);
            var damagedCommits = DeviceImage.Write(commitImage, SegmentSize);
            string context = $"{how}\ncommitted states:\n  {string.Join("\n  ", states)}";
            Darq.Darq reopened;
            using var timeout = new CancellationTokenSource();
            try
            {
                // The token also stops an open that hangs, rather than leave it running behind the next inputs.
                var open = OpenAsync(damagedLog, damagedCommits, timeout.Token);
                timeout.CancelAfter(TimeSpan.FromSeconds(20));
                reopened = await open.WaitAsync(TimeSpan.FromSeconds(20));
            }
            catch (Exception e) when (e is InvalidDataException || e.GetType().Name == "DarqCommitSlotSizeMismatchException")
            {
                // Refused: with nothing written.
                Assert.Equal(logImage, DeviceImage.Read(damagedLog, SegmentSize));
                Assert.Equal(commitImage, DeviceImage.Read(damagedCommits, SegmentSize));
                run.Tally("refused");
                return;
            }
            catch (Exception e) when (e is TimeoutException or OperationCanceledException)
            {
                throw new TimeoutException($"the open did not end within 20 s\n{context}");
            }
            catch (Exception e)
            {
                throw new InvalidOperationException($"the open failed with {e.GetType().Name}, not InvalidDataException\n{context}", e);
            }

            string recovered;
            await using (reopened)
            {
                recovered = await ReplayAsync(reopened);
                Assert.True(states.Contains(recovered), $"recovered a state no commit held: {recovered}\n{context}");
                run.Tally(recovered == states[^1] ? "recovered the last commit" : recovered == states[0] ? "recovered empty" : "recovered an older commit");

                // It goes on: an enqueue is committed and read back by the next open.
                await reopened.EnqueueAsync(new byte[] { 0xEE, (byte)seed });
                await reopened.CommitAsync();
            }

            await using var again = await OpenAsync(damagedLog, damagedCommits).WaitAsync(TimeSpan.FromSeconds(20));
            string afterwards = await ReplayAsync(again);
            Assert.EndsWith($"{Convert.ToHexString([0xEE, (byte)seed])}]", afterwards.Split(" out:")[0], StringComparison.Ordinal);
        });
    }

    internal static Task<Darq.Darq> OpenAsync(InMemoryStorage log, InMemoryStorage commits, CancellationToken cancellationToken = default) => Darq.Darq.OpenAsync(Options("fuzz", log, commits), cancellationToken: cancellationToken);

    internal static DarqOptions Options(string name, InMemoryStorage log, InMemoryStorage commits) => new()
    {
        Name = name,
        LogDevice = DseDevices.CreateInMemory(log),
        CommitDevice = DseDevices.CreateInMemory(commits),
        PageSize = PageSize,
        MemorySize = 4 * PageSize,
        SegmentSize = SegmentSize,
        MaxMessageSize = (int)(PageSize / 4),
        MaxProducers = 16,
        CommitInterval = Timeout.InfiniteTimeSpan,
    };

    /// <summary>Seeded operations through a processor; after each commit the committed state is added to <paramref name="states"/>.</summary>
    internal static async Task RunWorkloadAsync(Darq.Darq darq, Random random, List<string> states)
    {
        var model = new Model();
        var processor = await darq.RegisterProcessorAsync();
        for (int op = random.Next(1, 25); op > 0; op--)
        {
            switch (random.Next(8))
            {
                case 0 or 1:
                {
                    var payload = Payload(random);
                    model.In[(await darq.EnqueueAsync(payload)).Lsn] = payload;
                    break;
                }

                case 2:
                {
                    long producer = Producers[random.Next(Producers.Length)];
                    long next = model.Sequences.GetValueOrDefault(producer, -1) + 1;
                    long sequence = random.Next(4) == 0 ? Math.Max(0, next - 1) : next;
                    var payload = Payload(random);
                    var result = await darq.EnqueueAsync(producer, sequence, payload);
                    if (!result.IsDuplicate)
                    {
                        model.In[result.Lsn] = payload;
                        model.Sequences[producer] = sequence;
                    }

                    break;
                }

                case 3 or 4:
                {
                    var step = new DarqStep();
                    var consumed = model.In.Keys.Concat(model.Self.Keys).Where(_ => random.Next(3) == 0).ToList();
                    foreach (long lsn in consumed)
                    {
                        step.Consume(lsn);
                    }

                    var selves = Enumerable.Range(0, random.Next(0, 3)).Select(_ => Payload(random)).ToList();
                    foreach (var self in selves)
                    {
                        step.AddSelf(self);
                    }

                    bool withOut = random.Next(2) == 0;
                    if (withOut)
                    {
                        step.AddOut("elsewhere", Payload(random));
                    }

                    if (step.IsEmpty)
                    {
                        step.AddSelf(selves.Count == 0 ? Payload(random) : selves[0]);
                        selves.Add(step.SelfMessages[^1].ToArray());
                    }

                    var result = await processor.StepAsync(step);
                    foreach (long lsn in consumed)
                    {
                        model.In.Remove(lsn);
                        model.Self.Remove(lsn);
                    }

                    for (int i = 0; i < selves.Count; i++)
                    {
                        model.Self[result.SelfLsns[i]] = selves[i];
                    }

                    foreach (long lsn in result.OutLsns)
                    {
                        model.Out.Add(lsn);
                    }

                    break;
                }

                case 5 when model.Self.Count > 0:
                {
                    var replace = model.Self.Keys.Where(_ => random.Next(2) == 0).DefaultIfEmpty(model.Self.Keys.First()).ToList();
                    var snapshot = Enumerable.Range(0, random.Next(0, 3)).Select(_ => (ReadOnlyMemory<byte>)Payload(random)).ToList();
                    var result = await processor.CheckpointAsync(replace, snapshot);
                    foreach (long lsn in replace)
                    {
                        model.Self.Remove(lsn);
                    }

                    for (int i = 0; i < snapshot.Count; i++)
                    {
                        model.Self[result.SelfLsns[i]] = snapshot[i].ToArray();
                    }

                    break;
                }

                case 6 when model.Out.Count > 0:
                {
                    // A discard returns once it is durable: a commit.
                    long lsn = model.Out.Min;
                    Assert.True(await darq.DiscardOutAsync(lsn));
                    model.Out.Remove(lsn);
                    states.Add(await StateAsync(darq, model));
                    break;
                }

                default:
                    await darq.CommitAsync();
                    states.Add(await StateAsync(darq, model));
                    break;
            }
        }

        await darq.CommitAsync();
        states.Add(await StateAsync(darq, model));
    }

    private static byte[] Payload(Random random)
    {
        var payload = new byte[random.Next(3) == 0 ? random.Next(100, 3000) : random.Next(0, 24)];
        random.NextBytes(payload);
        return payload;
    }

    /// <summary>The state the model says the DARQ holds, checked against the DARQ's own counts, in the form <see cref="ReplayAsync"/> reads back.</summary>
    internal static async Task<string> StateAsync(Darq.Darq darq, Model model)
    {
        Assert.Equal(model.In.Count + model.Self.Count, darq.UnconsumedCount);
        Assert.Equal(model.Out.Count, darq.PendingOutCount);
        return await Describe(darq, model.Self.Values, model.In.Values, model.Out.Count);
    }

    /// <summary>What a reopened DARQ holds: its replay (SELF, then IN, each in LSN order), pending OUT count and producer table.</summary>
    private static async Task<string> ReplayAsync(Darq.Darq darq)
    {
        var processor = await darq.RegisterProcessorAsync();
        var self = new List<byte[]>();
        var input = new List<byte[]>();
        for (int i = 0; i < processor.ReplayCount; i++)
        {
            var message = await processor.Messages.ReadAsync().AsTask().WaitAsync(TimeSpan.FromSeconds(10));
            (message.Kind == DarqMessageKind.In ? input : self).Add(message.Payload.ToArray());
        }

        return await Describe(darq, self, input, darq.PendingOutCount);
    }

    private static async Task<string> Describe(Darq.Darq darq, IEnumerable<byte[]> self, IEnumerable<byte[]> input, int outCount)
    {
        var sequences = new List<string>();
        foreach (long producer in Producers)
        {
            sequences.Add($"{producer}={await darq.ProducerSequenceAsync(producer)}");
        }

        return $"self:[{string.Join(",", self.Select(Convert.ToHexString))}] in:[{string.Join(",", input.Select(Convert.ToHexString))}] " +
            $"out:{outCount} producers:{string.Join(",", sequences)}";
    }

    /// <summary>What the workload did, by LSN (sorted, as the replay is).</summary>
    internal sealed class Model
    {
        public SortedDictionary<long, byte[]> In { get; } = [];

        public SortedDictionary<long, byte[]> Self { get; } = [];

        public SortedSet<long> Out { get; } = [];

        public Dictionary<long, long> Sequences { get; } = [];
    }
}
