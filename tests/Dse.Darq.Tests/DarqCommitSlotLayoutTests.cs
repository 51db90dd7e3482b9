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
