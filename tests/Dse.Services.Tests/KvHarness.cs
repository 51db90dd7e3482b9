namespace Dse.Services.Tests;

/// <summary>Opens <see cref="SpeculativeKv"/> instances over one directory, as a restarted process would.</summary>
internal sealed class KvHarness : IDisposable
{
    private readonly TempDirectory _dir = new();

    public string Directory => _dir.Path;

    public SpeculativeKv Create(long id = 1, int indexCheckpointInterval = 4) =>
        new(LogHarness.Options(id), new SpeculativeKvOptions
        {
            Directory = _dir.Path,
            IndexBuckets = 1 << 10,
            PageSizeBits = 16,
            MemorySizeBits = 20,
            SegmentSizeBits = 22,
            MaxKeyBytes = 64,
            MaxValueBytes = 4096,
            IndexCheckpointInterval = indexCheckpointInterval,
        });

    public async Task<SpeculativeKv> OpenAsync(ClusterCoordinator coordinator, long id = 1, int indexCheckpointInterval = 4)
    {
        var kv = Create(id, indexCheckpointInterval);
        await kv.ConnectAsync(coordinator);
        return kv;
    }

    public void Dispose() => _dir.Dispose();
}
