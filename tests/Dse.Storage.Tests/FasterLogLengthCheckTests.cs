using System.Buffers.Binary;
using Dse.Storage.Tests.Infrastructure;
using FASTER.core;

namespace Dse.Storage.Tests;

/// <summary>
/// <see cref="FasterLogs.ScanAsync"/> and <see cref="FasterLogs.ReadAsync"/> over a committed FasterLog whose record
/// length word was damaged on the device: every value ends the read with an error naming the address, never a hang
/// (FasterLog's own iterator spins forever on a word whose padded record size overflows 32 bits).
/// </summary>
[Trait("Category", "Recovery")]
public sealed class FasterLogLengthCheckTests
{
    private const int PageSize = 1 << 12;
    private const int SegmentSize = 1 << 16;
    private const int EntryLength = 100;
    private const int Entries = 100;

    /// <summary>Bounds a read that should end at once; a hang inside FasterLog's iterator fails the test instead.</summary>
    private static readonly TimeSpan Bound = TimeSpan.FromSeconds(30);

    /// <summary>Where the damaged record lies.</summary>
    public enum Place
    {
        /// <summary>The scan's first record.</summary>
        First,

        /// <summary>A record in the middle of the first page.</summary>
        Middle,

        /// <summary>The first record of the second page (the first page ends in padding).</summary>
        PageStart,

        /// <summary>A record on the tail page, which recovery loads into the log's memory.</summary>
        TailPage,
    }

    public static TheoryData<int, Place> DamagedWords()
    {
        int[] words =
        [
            int.MinValue, int.MinValue + 3, int.MaxValue, int.MaxValue - 3, int.MaxValue - 6, -1, -EntryLength, PageSize, PageSize - 3,
        ];
        var data = new TheoryData<int, Place>();
        foreach (int word in words)
        {
            foreach (var place in Enum.GetValues<Place>())
            {
                data.Add(word, place);
            }
        }

        return data;
    }

    [Theory]
    [MemberData(nameof(DamagedWords))]
    public async Task ScanAsync_DamagedLengthWord_EndsWithReadErrorAtItsAddress(int word, Place place)
    {
        using var directory = new TempDirectory();
        var storage = new InMemoryStorage();
        var addresses = await WriteAsync(storage, directory.Path);
        int index = IndexOf(addresses, place);
        Damage(storage, addresses[index], word);

        using var log = Reopen(storage, directory.Path, out var device, out var manager);
        using (device)
        using (manager)
        {
            long from = place == Place.First ? addresses[index] : log.BeginAddress;
            var read = new List<long>();
            var scan = Task.Run(async () =>
            {
                await foreach (var entry in FasterLogs.ScanAsync(log, from, log.CommittedUntilAddress))
                {
                    read.Add(entry.Address);
                }
            });
            var ended = await Task.WhenAny(scan, Task.Delay(Bound));
            Assert.True(ended == scan, $"the scan did not end within {Bound.TotalSeconds} s (length word {word} at address {addresses[index]})");
            var error = await Assert.ThrowsAsync<FasterLogReadException>(() => scan);
            Assert.Equal(addresses[index], error.Address);
            Assert.IsType<InvalidDataException>(error.InnerException);
            Assert.Contains("length field", error.Message, StringComparison.Ordinal);

            // Every intact entry before the damage was returned first.
            Assert.Equal(place == Place.First ? [] : addresses.Take(index), read);
        }
    }

    [Theory]
    [MemberData(nameof(DamagedWords))]
    public async Task ReadAsync_DamagedLengthWord_ReturnsNoEntryOrReadError(int word, Place place)
    {
        using var directory = new TempDirectory();
        var storage = new InMemoryStorage();
        var addresses = await WriteAsync(storage, directory.Path);
        long address = addresses[IndexOf(addresses, place)];
        Damage(storage, address, word);

        using var log = Reopen(storage, directory.Path, out var device, out var manager);
        using (device)
        using (manager)
        {
            var read = Task.Run(async () => await FasterLogs.ReadAsync(log, address, 0));
            var ended = await Task.WhenAny(read, Task.Delay(Bound));
            Assert.True(ended == read, $"the read did not end within {Bound.TotalSeconds} s (length word {word} at address {address})");
            try
            {
                var (entry, _) = await read;
                Assert.Null(entry);
            }
            catch (FasterLogReadException e)
            {
                Assert.Equal(address, e.Address);
            }
        }
    }

    [Fact]
    public async Task ScanAsync_IntactLog_ReturnsEveryEntryAcrossPagesFromAnyEntry()
    {
        using var directory = new TempDirectory();
        var storage = new InMemoryStorage();
        var addresses = await WriteAsync(storage, directory.Path);
        using var log = Reopen(storage, directory.Path, out var device, out var manager);
        using (device)
        using (manager)
        {
            Assert.True(addresses[^1] >= 2 * PageSize, "the entries should span more than two pages");
            foreach (int start in new[] { 0, 1, IndexOf(addresses, Place.PageStart), Entries - 1 })
            {
                var read = new List<FasterLogEntry>();
                await Task.Run(async () =>
                {
                    await foreach (var entry in FasterLogs.ScanAsync(log, addresses[start], log.CommittedUntilAddress))
                    {
                        read.Add(entry);
                    }
                }).WaitAsync(Bound);

                Assert.Equal(addresses.Skip(start), read.Select(e => e.Address));
                Assert.All(read, e => Assert.Equal(Payload(addresses.IndexOf(e.Address)), e.Span.ToArray()));
            }

            var (single, length) = await FasterLogs.ReadAsync(log, addresses[5], 0);
            Assert.Equal(Payload(5), single.AsSpan(0, length).ToArray());
        }
    }

    [Fact]
    public async Task ScanAsync_EntriesThisProcessWroteStillInMemory_ReadsOnlyAnUncertainStartFromTheDevice()
    {
        using var directory = new TempDirectory();
        using var device = new CountingDevice(DseDevices.CreateInMemory(new InMemoryStorage()));
        using var manager = CommitManager(directory.Path);
        using var log = new FasterLog(FasterLogs.Settings(device, manager, PageSize, 16 * PageSize, SegmentSize));

        // A new log's first scan (empty: nothing committed) is what first sees it, as DARQ's recovery does.
        await foreach (var unexpected in FasterLogs.ScanAsync(log, log.BeginAddress, log.CommittedUntilAddress))
        {
            Assert.Fail($"an empty log returned an entry at {unexpected.Address}");
        }

        var addresses = new List<long>();
        for (int i = 0; i < Entries; i++)
        {
            addresses.Add(log.Enqueue(Payload(i)));
        }

        await log.CommitAsync();
        Assert.True(FasterLogResidency.Of(log).IsOwnInMemory(addresses[^1]), "the log's head address could not be read (FasterLogResidency's reflection)");
        int reads = device.Reads;
        var read = new List<long>();
        await foreach (var entry in FasterLogs.ScanAsync(log, log.BeginAddress, log.CommittedUntilAddress))
        {
            read.Add(entry.Address);
        }

        Assert.Equal(addresses, read);
        Assert.Equal(reads, device.Reads);

        // From an entry the scan cannot know to be a record start: its first word is read (one sector), nothing else.
        read.Clear();
        await foreach (var entry in FasterLogs.ScanAsync(log, addresses[1], log.CommittedUntilAddress))
        {
            read.Add(entry.Address);
        }

        Assert.Equal(addresses.Skip(1), read);
        Assert.Equal(reads + 1, device.Reads);
    }

    [Theory]
    [InlineData(int.MaxValue)]
    [InlineData(int.MinValue)]
    public async Task ScanAsync_StartInsideARecordThisProcessWrote_ChecksTheWordThere(int word)
    {
        using var directory = new TempDirectory();
        using var device = DseDevices.CreateInMemory(new InMemoryStorage());
        using var manager = CommitManager(directory.Path);
        using var log = new FasterLog(FasterLogs.Settings(device, manager, PageSize, 16 * PageSize, SegmentSize));
        await foreach (var unexpected in FasterLogs.ScanAsync(log, log.BeginAddress, log.CommittedUntilAddress))
        {
            Assert.Fail($"an empty log returned an entry at {unexpected.Address}");
        }

        // A payload whose first bytes read as a damaging length word, scanned from inside the record (a caller's LSN).
        var payload = Payload(0);
        BinaryPrimitives.WriteInt32LittleEndian(payload, word);
        log.Enqueue(Payload(1));
        long address = log.Enqueue(payload);
        log.Enqueue(Payload(2));
        await log.CommitAsync();
        long inside = address + log.HeaderSize;
        Assert.True(FasterLogResidency.Of(log).IsOwnInMemory(inside));

        var scan = Task.Run(async () =>
        {
            await foreach (var entry in FasterLogs.ScanAsync(log, inside, log.CommittedUntilAddress))
            {
                Assert.Fail($"an entry at {entry.Address} was read from inside a record");
            }
        });
        var ended = await Task.WhenAny(scan, Task.Delay(Bound));
        Assert.True(ended == scan, $"the scan from inside a record did not end within {Bound.TotalSeconds} s (word {word})");
        var error = await Assert.ThrowsAsync<FasterLogReadException>(() => scan);
        Assert.Equal(inside, error.Address);
    }

    [Fact]
    public async Task ScanAsync_RecoveredLog_ChecksTheWordsRecoveryLoadedIntoMemory()
    {
        using var directory = new TempDirectory();
        var storage = new InMemoryStorage();
        var addresses = await WriteAsync(storage, directory.Path);
        using var log = Reopen(storage, directory.Path, out var device, out var manager);
        using (device)
        using (manager)
        {
            // The tail page is in memory, but recovery read it from the device: none of its words is this process's own.
            await foreach (var entry in FasterLogs.ScanAsync(log, addresses[^1], log.CommittedUntilAddress))
            {
                Assert.Equal(addresses[^1], entry.Address);
            }

            Assert.False(FasterLogResidency.Of(log).IsOwnInMemory(addresses[^1]));
            long appended = log.Enqueue(Payload(0));
            Assert.True(FasterLogResidency.Of(log).IsOwnInMemory(appended));
        }
    }

    private static byte[] Payload(int index) => Enumerable.Repeat((byte)(index + 1), EntryLength).ToArray();

    /// <summary>Writes and commits the entries, then closes the log; returns their addresses.</summary>
    private static async Task<List<long>> WriteAsync(InMemoryStorage storage, string commits)
    {
        var addresses = new List<long>();
        using var device = DseDevices.CreateInMemory(storage);
        using var manager = CommitManager(commits);
        using var log = new FasterLog(FasterLogs.Settings(device, manager, PageSize, 4 * PageSize, SegmentSize));
        for (int i = 0; i < Entries; i++)
        {
            addresses.Add(log.Enqueue(Payload(i)));
        }

        await log.CommitAsync();
        return addresses;
    }

    /// <summary>Opens the log on the same storage and recovers it, so that every read comes from the device.</summary>
    private static FasterLog Reopen(InMemoryStorage storage, string commits, out IDevice device, out ILogCommitManager manager)
    {
        device = DseDevices.CreateInMemory(storage);
        manager = CommitManager(commits);
        var log = new FasterLog(FasterLogs.Settings(device, manager, PageSize, 4 * PageSize, SegmentSize));
        log.Recover(-1);
        return log;
    }

    private static DeviceLogCommitCheckpointManager CommitManager(string directory) =>
        new(new LocalStorageNamedDeviceFactory(), new DefaultCheckpointNamingScheme(directory));

    private static int IndexOf(List<long> addresses, Place place) => place switch
    {
        Place.First => 3,
        Place.Middle => 7,
        Place.TailPage => Entries - 5,
        _ => addresses.FindIndex(a => a % PageSize == 0 && a > 0),
    };

    /// <summary>Counts the reads issued to the device.</summary>
    private sealed class CountingDevice(IDevice inner) : DelegatingDevice(inner, ownsInner: true)
    {
        private int _reads;

        public int Reads => Volatile.Read(ref _reads);

        public override void ReadAsync(int segmentId, ulong sourceAddress, IntPtr destinationAddress, uint readLength,
            DeviceIOCompletionCallback callback, object? context)
        {
            Interlocked.Increment(ref _reads);
            base.ReadAsync(segmentId, sourceAddress, destinationAddress, readLength, callback, context);
        }
    }

    private static void Damage(InMemoryStorage storage, long address, int word)
    {
        var field = new byte[4];
        BinaryPrimitives.WriteInt32LittleEndian(field, word);
        storage.Write((int)(address / SegmentSize), address % SegmentSize, field);
    }
}
