using System.Buffers.Binary;
using System.IO.Hashing;
using Dse.Storage;
using Microsoft.Extensions.Logging.Abstractions;

namespace Dse.Darq.Tests;

/// <summary>
/// The two commit slots' offsets follow from their size. Revision 3 sized them without the speculation room outside
/// general speculation; a commit device written that way still opens at its newest commit.
/// </summary>
[Trait("Category", "Recovery")]
public sealed class DarqCommitSlotLayoutTests
{
    private const int LegacyMetadata = 8 * 1024;
    private const int Metadata = LegacyMetadata + (16 * 1024);

    // Slot sizes for two MaxProducers values: 64 + 56 + 16n + 4 KiB + 16 KiB, rounded up to 4 KiB.
    private const int SmallSlotProducers = 16;
    private const int SmallSlots = 24576;
    private const int LargeSlotProducers = 1024;
    private const int LargeSlots = 40960;

    [Fact]
    public async Task Open_CommitsWrittenWithLegacySlots_FindsTheNewestInTheLegacySecondSlot()
    {
        var storage = new InMemoryStorage();
        await WriteCommitsAsync(storage, LegacyMetadata, commits: 2);

        using var reopened = await DarqCommitManager.OpenAsync(DseDevices.CreateInMemory(storage), Metadata, LegacyMetadata, ownsDevice: true,
            NullLogger.Instance, "darq");

        Assert.Equal(2, reopened.LatestCommit);
        Assert.Equal(Payload(2), reopened.GetCommitMetadata(2));
    }

    [Fact]
    public async Task Open_CommitsWrittenWithLegacySlotsWithoutTheProbe_MissesTheNewest()
    {
        // What the probe is for: without it, the second slot is looked for at the new offset and the newest commit is lost.
        var storage = new InMemoryStorage();
        await WriteCommitsAsync(storage, LegacyMetadata, commits: 2);

        using var reopened = await DarqCommitManager.OpenAsync(DseDevices.CreateInMemory(storage), Metadata, 0, ownsDevice: true, NullLogger.Instance, "darq");

        Assert.Equal(1, reopened.LatestCommit);
    }

    [Fact]
    public async Task Open_LegacyCommitsThenNewOnes_NewestWinsOverTheStaleLegacySlot()
    {
        var storage = new InMemoryStorage();
        await WriteCommitsAsync(storage, LegacyMetadata, commits: 2);
        using (var upgraded = await DarqCommitManager.OpenAsync(DseDevices.CreateInMemory(storage), Metadata, LegacyMetadata, ownsDevice: true,
                   NullLogger.Instance, "darq"))
        {
            // Commit 2 was in the legacy second slot, so these go to slot 0, then to the new second slot.
            upgraded.Commit(0, 300, Payload(3), 3, false);
            upgraded.Commit(0, 400, Payload(4), 4, false);
        }

        using var reopened = await DarqCommitManager.OpenAsync(DseDevices.CreateInMemory(storage), Metadata, LegacyMetadata, ownsDevice: true,
            NullLogger.Instance, "darq");

        Assert.Equal(4, reopened.LatestCommit);
        Assert.Equal(Payload(4), reopened.GetCommitMetadata(4));
        Assert.Equal([3L, 4L], reopened.ListCommits().Order());
    }

    [Fact]
    public async Task Open_WithAnotherMaxProducers_RefusedNamingTheOptionAndNothingLost()
    {
        var storage = new DarqTestStorage();
        await using (var darq = await storage.OpenAsync())
        {
            await darq.EnqueueAsync(7, 1, "a".Bytes());
            await darq.CommitAsync();
            await darq.EnqueueAsync(7, 2, "b".Bytes());
            await darq.CommitAsync();
        }

        var error = await Assert.ThrowsAsync<InvalidOperationException>(() => storage.OpenAsync(o => o.MaxProducers = 1024));
        Assert.Contains("MaxProducers", error.Message, StringComparison.Ordinal);

        await using var reopened = await storage.OpenAsync();
        var processor = await reopened.RegisterProcessorAsync();
        Assert.Equal(["a", "b"], processor.Drain().Select(m => m.Text()));
    }

    [Fact]
    public async Task Open_FirstSlotTornNewestInSecondAndMoreMaxProducers_RefusedAndTheRightOneRecoversAll()
    {
        // MaxProducers 16 gives 24 KiB slots; 1024 gives 40 KiB ones, and its revision-3 second slot would be at 24 KiB:
        // where this DARQ's newest commit is, which an open that did not check would take as a revision-3 record.
        var storage = new DarqTestStorage();
        await WriteTwoCommitsAsync(storage, SmallSlotProducers);
        Assert.True(storage.CommitInSlot(1, SmallSlots) > storage.CommitInSlot(0, SmallSlots), "the newest commit is in the second slot");
        storage.TearFirstCommitSlot();
        var image = storage.Image();

        var error = await Assert.ThrowsAsync<InvalidOperationException>(() => storage.OpenAsync(o => o.MaxProducers = LargeSlotProducers));

        AssertNamesBothLayouts(error, SmallSlots, "1 to 248", LargeSlotProducers, LargeSlots);
        Assert.Equal(image, storage.Image());
        await AssertRecoversBothAsync(storage, SmallSlotProducers);
    }

    [Fact]
    public async Task Open_FirstSlotHeaderDamagedAndFewerMaxProducers_RefusedFromTheSecondSlotAndTheRightOneRecoversAll()
    {
        // The first slot states nothing: its header is damaged. The second slot of the 40 KiB layout lies inside the two
        // 24 KiB slots an open with MaxProducers 16 reads, and states its own size there.
        var storage = new DarqTestStorage();
        await WriteTwoCommitsAsync(storage, LargeSlotProducers);
        Assert.True(storage.CommitInSlot(1, LargeSlots) > storage.CommitInSlot(0, LargeSlots), "the newest commit is in the second slot");
        storage.DamageFirstCommitSlotHeader();
        var image = storage.Image();

        var error = await Assert.ThrowsAsync<InvalidOperationException>(() => storage.OpenAsync(o => o.MaxProducers = SmallSlotProducers));

        AssertNamesBothLayouts(error, LargeSlots, "1017 to 1272", SmallSlotProducers, SmallSlots);
        Assert.Equal(image, storage.Image());
        await AssertRecoversBothAsync(storage, LargeSlotProducers);
    }

    [Fact]
    public async Task Open_OnlyCommitTornInFirstSlot_AnotherMaxProducersRefusedNothingChanged()
    {
        // No valid commit at all: the torn record's header, which has its own checksum, still states its slot size.
        var storage = new DarqTestStorage();
        await using (var darq = await storage.OpenAsync())
        {
            await darq.EnqueueAsync(7, 1, "a".Bytes());
            await darq.CommitAsync();
            storage.CrashNow();
        }

        Assert.Equal(-1, storage.CommitInSlot(1, SmallSlots));
        storage.TearFirstCommitSlot();
        var image = storage.Image();

        var error = await Assert.ThrowsAsync<InvalidOperationException>(() => storage.OpenAsync(o => o.MaxProducers = LargeSlotProducers));

        AssertNamesBothLayouts(error, SmallSlots, "1 to 248", LargeSlotProducers, LargeSlots);
        Assert.Equal(image, storage.Image());
    }

    [Fact]
    public void FindForeignSlotSize_RevisionThreeFirstSlotAndAnotherLayoutsSecondSlotInItsMetadata_NotTakenForASlot()
    {
        // A record found at a slot start claims its metadata: a header-like block inside it is not a second slot.
        const int slotSize = 24576;
        var region = new byte[2 * slotSize];
        WriteHeader(region, 0, slotSize: 0, metadataLength: 12000);
        WriteHeader(region, 8192, slotSize: 8192, metadataLength: 100);

        Assert.Null(DarqCommitManager.FindForeignSlotSize(region, slotSize, slotSize));

        WriteHeader(region, 0, slotSize: 0, metadataLength: 100);
        Assert.Equal<(int, int)?>((8192, 8192), DarqCommitManager.FindForeignSlotSize(region, slotSize, slotSize));
    }

    private static async Task WriteTwoCommitsAsync(DarqTestStorage storage, int maxProducers)
    {
        await using var darq = await storage.OpenAsync(o => o.MaxProducers = maxProducers);
        await darq.EnqueueAsync(7, 1, "a".Bytes());
        await darq.CommitAsync();
        await darq.EnqueueAsync(7, 2, "b".Bytes());
        await darq.CommitAsync();
    }

    private static async Task AssertRecoversBothAsync(DarqTestStorage storage, int maxProducers)
    {
        await using var reopened = await storage.OpenAsync(o => o.MaxProducers = maxProducers);
        var processor = await reopened.RegisterProcessorAsync();
        Assert.Equal(["a", "b"], processor.Drain().Select(m => m.Text()));
    }

    private static void AssertNamesBothLayouts(InvalidOperationException error, int recordedSlots, string recordedProducers, int maxProducers, int slots)
    {
        Assert.Contains($"{recordedSlots}-byte commit slots, which MaxProducers {recordedProducers} give", error.Message, StringComparison.Ordinal);
        Assert.Contains($"this open has MaxProducers {maxProducers}, which gives {slots}-byte slots", error.Message, StringComparison.Ordinal);
        Assert.Contains("nothing was changed", error.Message, StringComparison.Ordinal);
    }

    /// <summary>A record header whose own checksum holds (its metadata is not written).</summary>
    private static void WriteHeader(byte[] region, int offset, int slotSize, int metadataLength)
    {
        var header = region.AsSpan(offset, 64);
        header.Clear();
        BinaryPrimitives.WriteUInt32LittleEndian(header, DarqCommitManager.Magic);
        BinaryPrimitives.WriteUInt16LittleEndian(header[4..], DarqCommitManager.Version);
        BinaryPrimitives.WriteInt64LittleEndian(header[8..], 1);
        BinaryPrimitives.WriteInt32LittleEndian(header[16..], metadataLength);
        BinaryPrimitives.WriteInt32LittleEndian(header[48..], slotSize);
        BinaryPrimitives.WriteUInt64LittleEndian(header[56..], XxHash64.HashToUInt64(header[..56]));
    }

    /// <summary>Writes commits with <paramref name="metadata"/>-sized slots as revision 3 did: no slot size recorded.</summary>
    private static async Task WriteCommitsAsync(InMemoryStorage storage, int metadata, int commits)
    {
        using (var manager = await DarqCommitManager.OpenAsync(DseDevices.CreateInMemory(storage), metadata, 0, ownsDevice: true, NullLogger.Instance, "darq"))
        {
            for (long commit = 1; commit <= commits; commit++)
            {
                manager.Commit(0, commit * 100, Payload(commit), commit, false);
            }
        }

        int slotSize = (64 + metadata + 4095) / 4096 * 4096;
        for (int slot = 0; slot < 2; slot++)
        {
            var header = new byte[64];
            Assert.True(storage.TryRead(0, slot * slotSize, header));
            BinaryPrimitives.WriteInt32LittleEndian(header.AsSpan(48), 0);
            BinaryPrimitives.WriteUInt64LittleEndian(header.AsSpan(56), XxHash64.HashToUInt64(header.AsSpan(0, 56)));
            storage.Write(0, slot * slotSize, header);
        }
    }

    private static byte[] Payload(long commit) => [.. Enumerable.Repeat((byte)commit, 100)];
}
