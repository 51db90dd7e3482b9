using System.Buffers.Binary;
using System.IO.Hashing;
using CsCheck;
using Dse.Coordinator;
using Xunit.Abstractions;

namespace Dse.Fuzz.Tests;

/// <summary>
/// The coordinator's durable log (docs/coordinator-log-format.md) on damaged bytes: journal entries decode to what they
/// encode or are refused with <see cref="InvalidDataException"/>; a damaged log file opens exactly as the specification's
/// recovery scan says (records, torn tail truncated, or <see cref="InvalidDataException"/>) and stays appendable; a
/// coordinator replays a journal of contradicting entries or refuses it with <see cref="InvalidDataException"/>.
/// </summary>
[Trait("Category", "Fuzz")]
public sealed class CoordinatorJournalFuzzTests(ITestOutputHelper output) : IDisposable
{
    private const int FrameHeader = 16;
    private const uint Magic = 0x6345_5344;

    private readonly string _directory = Path.Combine(Path.GetTempPath(), "dse-fuzz-journal-" + Guid.NewGuid().ToString("N"));

    private static readonly Gen<ClusterJournalEntry> Entry = Gen.OneOf<ClusterJournalEntry>(
        Gen.Long.Select(i => (ClusterJournalEntry)new CoordinatorStartedEntry(i)),
        Gen.Long.Select(i => (ClusterJournalEntry)new ParticipantRegisteredEntry(i)),
        Gen.Select(Gen.Long, Gen.Long, Gen.Long, (id, worldLine, kept) => (ClusterJournalEntry)new RollbackAcknowledgedEntry(id, worldLine, kept)),
        Gen.Select(Gen.Long[1, long.MaxValue], Gen.Long, Gen.Int[0, 2], Gen.Dictionary(Gen.Long, Gen.Long)[0, 5],
            (worldLine, failed, reason, cut) => (ClusterJournalEntry)new RollbackDecidedEntry(new RollbackDecision(worldLine, failed, cut, (RollbackReason)reason))));

    public void Dispose()
    {
        if (Directory.Exists(_directory))
        {
            Directory.Delete(_directory, recursive: true);
        }
    }

    [Fact]
    public void Decode_MutatedEntries_RoundTripOrInvalidData()
    {
        CodecCheck.Sample($"{nameof(CoordinatorJournalFuzzTests)}.{nameof(Decode_MutatedEntries_RoundTripOrInvalidData)}", output, CodecCheck.Inputs(Entry.Select(CoordinatorJournal.Encode)), bytes =>
        {
            ClusterJournalEntry entry;
            try
            {
                entry = CoordinatorJournal.Decode(bytes, 3, "fuzz");
            }
            catch (InvalidDataException e)
            {
                Assert.Contains("Record 3 of coordinator log fuzz", e.Message, StringComparison.Ordinal);
                return;
            }

            // Accepted: the entry encodes back to the same bytes, but for the order of a decision's cut (written ascending,
            // read in any order).
            var encoded = CoordinatorJournal.Encode(entry);
            Assert.Equal(bytes.Length, encoded.Length);
            Assert.Equal(Describe(entry), Describe(CoordinatorJournal.Decode(encoded)));
            if (entry is not RollbackDecidedEntry)
            {
                Assert.Equal(bytes, encoded);
            }
            else
            {
                // The decoder refuses a decision whose failed participant and reason contradict each other, so every byte of
                // the header round-trips (the cut's pairs may be read in any order).
                Assert.Equal(bytes.AsSpan(0, 2 + 8 + 8 + 1 + 4).ToArray(), encoded.AsSpan(0, 2 + 8 + 8 + 1 + 4).ToArray());
            }
        }, defaultInputs: 20_000);
    }

    [Fact]
    public async Task FileLogOpen_DamagedFile_MatchesTheSpecifiedRecoveryScan()
    {
        Directory.CreateDirectory(_directory);
        var run = FuzzRun.Start($"{nameof(CoordinatorJournalFuzzTests)}.{nameof(FileLogOpen_DamagedFile_MatchesTheSpecifiedRecoveryScan)}", output, defaultInputs: 500);
        await run.RunAsync(async (seed, random) =>
        {
            string path = Path.Combine(_directory, $"log-{seed}");
            var written = new List<byte[]>();
            await using (var log = new FileCoordinatorLog(path))
            {
                Assert.Empty(await log.OpenAsync());
                for (int i = random.Next(0, 5); i > 0; i--)
                {
                    var record = new byte[random.Next(0, 48)];
                    random.NextBytes(record);
                    await log.AppendAsync(record);
                    written.Add(record);
                }
            }

            var frames = written.Select(Frame).ToList();
            var image = await File.ReadAllBytesAsync(path);
            Assert.Equal(frames.SelectMany(f => f).ToArray(), image);
            var (damaged, how) = Mutations.Next(random, [image, .. frames], maxRandomLength: 96);
            await File.WriteAllBytesAsync(path, damaged);

            var expected = ReferenceScan(damaged);
            string context = $"{how}\nfile: {CodecCheck.Hex(damaged)}\nspecified: {expected}";
            IReadOnlyList<ReadOnlyMemory<byte>> records;
            var log2 = new FileCoordinatorLog(path);
            try
            {
                records = await log2.OpenAsync().WaitAsync(TimeSpan.FromSeconds(10));
            }
            catch (InvalidDataException e)
            {
                await log2.DisposeAsync();
                Assert.True(expected.Corrupt, $"open refused ({e.Message}) where the scan keeps {expected.Records.Count} records\n{context}");
                Assert.Equal(damaged, await File.ReadAllBytesAsync(path));
                run.Tally("refused");
                return;
            }

            try
            {
                Assert.False(expected.Corrupt, $"open accepted a log the scan refuses\n{context}");
                Assert.Equal(expected.Records.Select(CodecCheck.Hex), records.Select(r => CodecCheck.Hex(r.ToArray())));
                Assert.Equal(expected.ValidLength, new FileInfo(path).Length);

                // The recovered log takes appends, and a reopen reads them after what it recovered.
                await log2.AppendAsync(new byte[] { 0xAB, (byte)seed });
            }
            finally
            {
                await log2.DisposeAsync();
            }

            run.Tally(expected.ValidLength < damaged.Length ? "torn tail cut" : "opened whole");
            await using var log3 = new FileCoordinatorLog(path);
            var reopened = await log3.OpenAsync();
            Assert.Equal([.. expected.Records.Select(CodecCheck.Hex), CodecCheck.Hex([0xAB, (byte)seed])], reopened.Select(r => CodecCheck.Hex(r.ToArray())));
        });
    }

    [Fact]
    public async Task CoordinatorOpen_ContradictoryJournal_ReplaysOrInvalidData()
    {
        var run = FuzzRun.Start($"{nameof(CoordinatorJournalFuzzTests)}.{nameof(CoordinatorOpen_ContradictoryJournal_ReplaysOrInvalidData)}", output, defaultInputs: 2000);
        await run.RunAsync(async (seed, random) =>
        {
            var entries = Journal(random);
            var store = new InMemoryCoordinatorLogStore();
            await using (var writer = new InMemoryCoordinatorLog(store))
            {
                await writer.OpenAsync();
                foreach (var entry in entries)
                {
                    await writer.AppendAsync(CoordinatorJournal.Encode(entry));
                }
            }

            string context = string.Join("\n", entries.Select(Describe));
            int before = store.RecordCount;
            ClusterCoordinator coordinator;
            try
            {
                var (journal, recovered) = await CoordinatorJournal.OpenAsync(new InMemoryCoordinatorLog(store));
                coordinator = await ClusterCoordinator.OpenAsync(journal, recovered).WaitAsync(TimeSpan.FromSeconds(10));
            }
            catch (InvalidDataException)
            {
                // Refused: the journal is left as it was.
                Assert.Equal(before, store.RecordCount);
                run.Tally("refused");
                return;
            }
            catch (Exception e) when (e is not TimeoutException)
            {
                throw new InvalidOperationException($"the journal was refused with {e.GetType().Name}, not InvalidDataException:\n{context}", e);
            }

            // Accepted: the coordinator journaled its start and serves; the journal it extended opens again.
            await coordinator.DisposeAsync();
            Assert.Equal(before + 1, store.RecordCount);
            run.Tally("replayed");
            var (again, recoveredAgain) = await CoordinatorJournal.OpenAsync(new InMemoryCoordinatorLog(store));
            await using var second = await ClusterCoordinator.OpenAsync(again, recoveredAgain).WaitAsync(TimeSpan.FromSeconds(10));
        });
    }

    /// <summary>A plausible journal (starts, registrations, decisions in order, acknowledgements), then damaged entry by entry.</summary>
    private static List<ClusterJournalEntry> Journal(Random random)
    {
        var entries = new List<ClusterJournalEntry>();
        long worldLine = 0;
        var registered = new List<long>();
        for (int incarnation = 1; incarnation <= random.Next(1, 4); incarnation++)
        {
            entries.Add(new CoordinatorStartedEntry(incarnation));
            for (int i = random.Next(0, 4); i > 0; i--)
            {
                switch (random.Next(3))
                {
                    case 0:
                        long id = random.Next(1, 6);
                        registered.Add(id);
                        entries.Add(new ParticipantRegisteredEntry(id));
                        break;
                    case 1 when registered.Count > 0:
                        long failed = random.Next(5) == 0 ? RollbackDecision.ColdStart : registered[random.Next(registered.Count)];
                        var cut = registered.Distinct().ToDictionary(p => p, _ => (long)random.Next(0, 4));
                        entries.Add(new RollbackDecidedEntry(new RollbackDecision(++worldLine, failed, cut, (RollbackReason)random.Next(2))));
                        break;
                    case 2 when registered.Count > 0 && worldLine > 0:
                        entries.Add(new RollbackAcknowledgedEntry(registered[random.Next(registered.Count)], worldLine, random.Next(0, 4)));
                        break;
                }
            }
        }

        for (int i = random.Next(0, 4); i > 0 && entries.Count > 0; i--)
        {
            int at = random.Next(entries.Count);
            switch (random.Next(5))
            {
                case 0:
                    entries.RemoveAt(at);
                    break;
                case 1:
                    entries.Insert(random.Next(entries.Count + 1), entries[at]);
                    break;
                case 2:
                    (entries[at], entries[^1]) = (entries[^1], entries[at]);
                    break;
                case 3:
                    entries[at] = entries[at] switch
                    {
                        RollbackDecidedEntry d => new RollbackDecidedEntry(new RollbackDecision(Math.Max(1, d.Decision.WorldLine + random.Next(-2, 3)),
                            random.Next(3) == 0 ? random.Next(-1, 8) : d.Decision.FailedObjectId, d.Decision.Cut, (RollbackReason)random.Next(3))),
                        RollbackAcknowledgedEntry a => new RollbackAcknowledgedEntry(random.Next(-1, 8), a.WorldLine + random.Next(-2, 3), random.Next(-1, 6)),
                        CoordinatorStartedEntry s => new CoordinatorStartedEntry(s.Incarnation + random.Next(-3, 3)),
                        _ => new ParticipantRegisteredEntry(random.Next(-1, 8)),
                    };
                    break;
                default:
                    entries.Insert(at, new RollbackDecidedEntry(new RollbackDecision(random.Next(1, 5), random.Next(-1, 8),
                        new Dictionary<long, long> { [random.Next(0, 8)] = random.Next(-1, 5) }, (RollbackReason)random.Next(3))));
                    break;
            }
        }

        return entries;
    }

    private static string Describe(ClusterJournalEntry entry) => entry is RollbackDecidedEntry d ? $"RollbackDecided({d.Decision})" : entry.ToString();

    private static byte[] Frame(byte[] payload)
    {
        var frame = new byte[FrameHeader + payload.Length];
        BinaryPrimitives.WriteUInt32LittleEndian(frame, Magic);
        BinaryPrimitives.WriteUInt32LittleEndian(frame.AsSpan(4), (uint)payload.Length);
        BinaryPrimitives.WriteUInt64LittleEndian(frame.AsSpan(8), XxHash64.HashToUInt64(payload));
        payload.CopyTo(frame.AsSpan(FrameHeader));
        return frame;
    }

    /// <summary>The recovery scan of docs/coordinator-log-format.md for a storage that can leave a torn tail, written from the document.</summary>
    private static ScanOutcome ReferenceScan(byte[] image)
    {
        var records = new List<byte[]>();
        int offset = 0;
        while (offset < image.Length)
        {
            if (ValidFrameAt(image, offset) is { } length)
            {
                records.Add(image.AsSpan(offset + FrameHeader, length).ToArray());
                offset += FrameHeader + length;
                continue;
            }

            // Rule 1: a valid frame anywhere after the damage is corruption in the middle.
            for (int next = offset + 1; next < image.Length; next++)
            {
                if (ValidFrameAt(image, next) is not null)
                {
                    return new ScanOutcome(true, records, offset);
                }
            }

            // Rule 2: one interrupted append is a torn tail; rule 3: anything else is corruption.
            var tail = image.AsSpan(offset);
            bool interrupted = tail.Length < FrameHeader
                || !tail.ContainsAnyExcept((byte)0)
                || (BinaryPrimitives.ReadUInt32LittleEndian(tail) == Magic
                    && BinaryPrimitives.ReadUInt32LittleEndian(tail[4..]) <= ICoordinatorLog.MaxRecordLength
                    && FrameHeader + (long)BinaryPrimitives.ReadUInt32LittleEndian(tail[4..]) >= tail.Length);
            return new ScanOutcome(!interrupted, records, offset);
        }

        return new ScanOutcome(false, records, offset);
    }

    private static int? ValidFrameAt(byte[] image, int offset)
    {
        var rest = image.AsSpan(offset);
        if (rest.Length < FrameHeader || BinaryPrimitives.ReadUInt32LittleEndian(rest) != Magic)
        {
            return null;
        }

        uint length = BinaryPrimitives.ReadUInt32LittleEndian(rest[4..]);
        if (length > ICoordinatorLog.MaxRecordLength || length > rest.Length - FrameHeader
            || BinaryPrimitives.ReadUInt64LittleEndian(rest[8..]) != XxHash64.HashToUInt64(rest.Slice(FrameHeader, (int)length)))
        {
            return null;
        }

        return (int)length;
    }

    private sealed record ScanOutcome(bool Corrupt, IReadOnlyList<byte[]> Records, int ValidLength)
    {
        public override string ToString() => Corrupt ? $"corrupt at {ValidLength}" : $"{Records.Count} records, {ValidLength} bytes";
    }
}
