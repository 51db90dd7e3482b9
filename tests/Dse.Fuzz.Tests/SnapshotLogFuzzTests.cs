using Dse.Storage;
using Xunit.Abstractions;

namespace Dse.Fuzz.Tests;

/// <summary>
/// The snapshot log's recovery (docs/storage-format.md) on damaged devices: a log written with appends and markers, its
/// bytes damaged on the device, then reopened. Recovery ends at the first damaged record (a torn tail, dropped) or
/// refuses with <see cref="InvalidDataException"/>; it never returns a record it was not given, and the recovered log
/// takes appends that a further reopen reads back.
/// </summary>
[Trait("Category", "Fuzz")]
public sealed class SnapshotLogFuzzTests(ITestOutputHelper output)
{
    private const int SectorSize = 512;

    [Fact]
    public async Task Open_DamagedDevice_RecoversAPrefixOrRefusesWithInvalidData()
    {
        var run = FuzzRun.Start($"{nameof(SnapshotLogFuzzTests)}.{nameof(Open_DamagedDevice_RecoversAPrefixOrRefusesWithInvalidData)}", output, defaultInputs: 1000);
        await run.RunAsync(async (seed, random) =>
        {
            long segmentSize = random.Next(2) == 0 ? 4096 : 1 << 20;
            var options = new SnapshotLogOptions { SegmentSize = segmentSize, OwnsDevice = true };
            var storage = new InMemoryStorage();

            // Write: states[k] is the live records after k records reached the device, starts[k] where record k begins.
            var states = new List<string> { Describe([]) };
            var starts = new List<long> { 0 };
            await using (var log = await SnapshotLog.OpenAsync(DseDevices.CreateInMemory(storage), options))
            {
                for (int i = random.Next(0, 7); i > 0; i--)
                {
                    ulong key = (ulong)random.Next(0, 6);
                    switch (random.Next(6))
                    {
                        case 0:
                            await log.DropAfterAsync(key);
                            break;
                        case 1:
                            await log.TruncateBeforeAsync(key);
                            break;
                        default:
                            var payload = new byte[random.Next(3) == 0 ? random.Next(400, 1500) : random.Next(0, 40)];
                            random.NextBytes(payload);
                            await log.AppendAsync(key, payload);
                            break;
                    }

                    if (log.TailAddress != starts[^1])
                    {
                        starts.Add(log.TailAddress);
                        states.Add(Describe(log.Records));
                    }
                }
            }

            var image = DeviceImage.Read(storage, segmentSize);
            var (damaged, how) = Mutations.Next(random, [image], maxRandomLength: 2048);

            // The first record whose header or payload changed (padding is not covered); all records when none did.
            int written = starts.Count - 1;
            int firstDamaged = written;
            for (int k = 0; k < written; k++)
            {
                if (!HeaderAndPayloadIntact(image, damaged, starts[k]))
                {
                    firstDamaged = k;
                    break;
                }
            }

            bool terminatorIntact = DeviceImage.SameRange(image, damaged, starts[written], SectorSize);
            string context = $"{how}; {written} records written, first damaged {firstDamaged}";
            SnapshotLog reopened;
            try
            {
                reopened = await SnapshotLog.OpenAsync(DseDevices.CreateInMemory(DeviceImage.Write(damaged, segmentSize)), options).WaitAsync(TimeSpan.FromSeconds(10));
            }
            catch (InvalidDataException e)
            {
                Assert.False(firstDamaged == written && terminatorIntact, $"refused an undamaged log: {e.Message}\n{context}");
                Assert.Contains("corrupt at address", e.Message, StringComparison.Ordinal);
                run.Tally("refused");
                return;
            }

            await using (reopened)
            {
                Assert.True(Describe(reopened.Records) == states[firstDamaged], $"recovered {Describe(reopened.Records)}, expected {states[firstDamaged]}\n{context}");
                Assert.Equal(starts[firstDamaged], reopened.TailAddress);
                run.Tally(firstDamaged == written ? "recovered whole" : "recovered a prefix");

                // The recovered log goes on: an append lands after what it recovered and survives a reopen.
                await reopened.AppendAsync(99, new byte[] { (byte)seed });
                var expected = Describe(reopened.Records);
                var after = DeviceImage.Read(((InMemoryDevice)reopened.Device).Storage, segmentSize);
                await using var again = await SnapshotLog.OpenAsync(DseDevices.CreateInMemory(DeviceImage.Write(after, segmentSize)), options);
                Assert.Equal(expected, Describe(again.Records));
            }
        });
    }

    /// <summary>Whether a record's header and payload are unchanged (its padding is covered by no checksum, and read by nobody).</summary>
    private static bool HeaderAndPayloadIntact(byte[] image, byte[] damaged, long start)
    {
        int payloadLength = BitConverter.ToInt32(image, (int)start + 8);
        long covered = 64 + payloadLength;
        return DeviceImage.SameRange(image, damaged, start, covered);
    }

    private static string Describe(IEnumerable<SnapshotRecord> records) =>
        "[" + string.Join(", ", records.Select(r => $"{r.Key}#{r.Sequence}@{r.Address}:{Convert.ToHexString(r.Payload.Span)}")) + "]";
}
