using Dse.Storage;

namespace Dse.Darq.Grpc.Tests;

/// <summary>In-memory storage for one DARQ (log and commit devices) that outlives DARQ instances, to reopen it after a restart.</summary>
internal sealed class TestStorage(string name, InMemoryStorage log, InMemoryStorage commits)
{
    public const long PageSize = 1 << 16;
    public const int MaxMessageSize = 4096;

    public TestStorage(string name)
        : this(name, new InMemoryStorage(), new InMemoryStorage())
    {
    }

    public string Name { get; } = name;

    public InMemoryStorage Log { get; } = log;

    public InMemoryStorage Commits { get; } = commits;

    /// <summary>A point-in-time copy of both devices' bytes (what a crash now would leave), to open another DARQ on.</summary>
    public TestStorage Snapshot() => new(Name, Log.Clone(), Commits.Clone());

    /// <summary>Options over fresh devices on this storage; commits only on demand (the gRPC service commits what it must acknowledge).</summary>
    public DarqOptions Options() => new()
    {
        Name = Name,
        LogDevice = DseDevices.CreateInMemory(Log),
        CommitDevice = DseDevices.CreateInMemory(Commits),
        PageSize = PageSize,
        MemorySize = 4 * PageSize,
        SegmentSize = 2 * PageSize,
        MaxMessageSize = MaxMessageSize,
        MaxProducers = 16,
        CommitInterval = Timeout.InfiniteTimeSpan,
        DeliveryRetryMinDelay = TimeSpan.FromMilliseconds(5),
        DeliveryRetryMaxDelay = TimeSpan.FromMilliseconds(100),
    };

    /// <summary>Flips a byte in the middle of the first occurrence of <paramref name="marker"/> in the log (found by content, not by layout).</summary>
    public void CorruptPayload(string marker)
    {
        byte[] needle = System.Text.Encoding.UTF8.GetBytes(marker);
        foreach (int segment in Log.SegmentIds)
        {
            Assert.True(Log.TryGetSegmentLength(segment, out long length));
            var bytes = new byte[length];
            Assert.True(Log.TryRead(segment, 0, bytes));
            int at = bytes.AsSpan().IndexOf(needle);
            if (at >= 0)
            {
                int target = at + (needle.Length / 2);
                Log.Write(segment, target, [(byte)(bytes[target] ^ 0xFF)]);
                return;
            }
        }

        Assert.Fail($"the log holds no '{marker}'");
    }

    public Task<Darq> OpenAsync(Action<DarqOptions>? configure = null)
    {
        var options = Options();
        configure?.Invoke(options);
        return Darq.OpenAsync(options);
    }
}
