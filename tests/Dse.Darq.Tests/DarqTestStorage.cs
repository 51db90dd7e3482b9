using System.Buffers.Binary;
using Dse.Storage;
using FASTER.core;
using Microsoft.Extensions.Logging;

namespace Dse.Darq.Tests;

/// <summary>In-memory storage for one DARQ (log and commit devices) that outlives DARQ instances, with crash cuts.</summary>
internal sealed class DarqTestStorage
{
    public const long PageSize = 1 << 16;
    public const long SegmentSize = 1 << 17;

    /// <summary>The open instance's coordinator link, cut by <see cref="CrashNow"/>.</summary>
    private CrashableCoordinatorLink? _link;

    public DarqTestStorage()
        : this(new InMemoryStorage(), new InMemoryStorage())
    {
    }

    private DarqTestStorage(InMemoryStorage log, InMemoryStorage commits)
    {
        Log = log;
        Commits = commits;
    }

    public InMemoryStorage Log { get; }

    public InMemoryStorage Commits { get; }

    public FaultInjectingDevice? LogFaults { get; private set; }

    public FaultInjectingDevice? CommitFaults { get; private set; }

    public static DarqOptions Options(IDevice log, IDevice commit) => new()
    {
        Name = "test",
        LogDevice = log,
        CommitDevice = commit,
        PageSize = PageSize,
        MemorySize = 4 * PageSize,
        SegmentSize = SegmentSize,
        MaxMessageSize = (int)(PageSize / 4),
        MaxProducers = 16,
        CommitInterval = Timeout.InfiniteTimeSpan,
    };

    public Task<Darq> OpenAsync(Action<DarqOptions>? configure = null, ILoggerFactory? loggerFactory = null)
    {
        LogFaults = new FaultInjectingDevice(DseDevices.CreateInMemory(Log));
        CommitFaults = new FaultInjectingDevice(DseDevices.CreateInMemory(Commits));
        var options = Options(LogFaults, CommitFaults);
        configure?.Invoke(options);
        _link = options.Coordinator is null ? null : new CrashableCoordinatorLink(options.Coordinator);
        options.Coordinator = _link;
        return Darq.OpenAsync(options, loggerFactory);
    }

    /// <summary>A point-in-time copy of both devices' bytes, to open a second DARQ without touching this storage.</summary>
    public DarqTestStorage Snapshot() => new(Log.Clone(), Commits.Clone());

    /// <summary>A crash: from now on nothing either device is asked to write reaches storage, and the instance reaches no coordinator.</summary>
    public void CrashNow()
    {
        // The coordinator link first: a version whose commit is acknowledged after the cut must never be reported.
        _link?.Cut();

        // Then the commit device before the log: cut the other way round, a commit record written in between would point at log pages
        // the cut already lost.
        CommitFaults!.CutNow();
        LogFaults!.CutNow();
    }

    /// <summary>Flips one byte of the log at a log address.</summary>
    public void CorruptLog(long address)
    {
        int segment = (int)(address / SegmentSize);
        long offset = address % SegmentSize;
        var one = new byte[1];
        Assert.True(Log.TryRead(segment, offset, one));
        one[0] ^= 0xFF;
        Log.Write(segment, offset, one);
    }

    /// <summary>Damages the commit slot holding the newest commit (as a torn commit write would).</summary>
    public void TearNewestCommit()
    {
        const int slotSize = 24576; // 64-byte header + metadata for 16 producers + 4 KiB + 16 KiB speculation room, rounded to 4 KiB
        long newest = -1;
        int newestSlot = -1;
        for (int slot = 0; slot < 2; slot++)
        {
            var header = new byte[64];
            if (Commits.TryRead(0, slot * slotSize, header) && BinaryPrimitives.ReadUInt32LittleEndian(header) != 0)
            {
                long number = BinaryPrimitives.ReadInt64LittleEndian(header.AsSpan(8));
                if (number > newest)
                {
                    (newest, newestSlot) = (number, slot);
                }
            }
        }

        Assert.True(newestSlot >= 0, "no commit slot holds a commit");
        var metadataByte = new byte[1];
        Commits.TryRead(0, (newestSlot * slotSize) + 64 + 8, metadataByte);
        metadataByte[0] ^= 0xFF;
        Commits.Write(0, (newestSlot * slotSize) + 64 + 8, metadataByte);
    }

    /// <summary>The commit number a commit slot's header states (whether or not its metadata is intact), or -1 when it is blank.</summary>
    public long CommitInSlot(int slot, int slotSize)
    {
        var header = new byte[64];
        return Commits.TryRead(0, (long)slot * slotSize, header) && BinaryPrimitives.ReadUInt32LittleEndian(header) != 0
            ? BinaryPrimitives.ReadInt64LittleEndian(header.AsSpan(8))
            : -1;
    }

    /// <summary>Tears the record in the first commit slot as a torn commit write would: a metadata byte flipped, its header intact.</summary>
    public void TearFirstCommitSlot() => FlipCommitByte(64 + 8);

    /// <summary>Damages the header of the record in the first commit slot (its checksum no longer holds), so that it states nothing.</summary>
    public void DamageFirstCommitSlotHeader() => FlipCommitByte(8);

    /// <summary>Both devices' bytes, segment by segment, to show that an open changed nothing.</summary>
    public byte[] Image()
    {
        using var image = new MemoryStream();
        foreach (var storage in new[] { Log, Commits })
        {
            foreach (int segment in storage.SegmentIds)
            {
                Assert.True(storage.TryGetSegmentLength(segment, out long length));
                var bytes = new byte[length];
                Assert.True(storage.TryRead(segment, 0, bytes));
                image.Write(BitConverter.GetBytes(segment));
                image.Write(BitConverter.GetBytes(length));
                image.Write(bytes);
            }
        }

        return image.ToArray();
    }

    private void FlipCommitByte(long offset)
    {
        var one = new byte[1];
        Assert.True(Commits.TryRead(0, offset, one), "the commit device holds nothing");
        one[0] ^= 0xFF;
        Commits.Write(0, offset, one);
    }
}
