using Dse.Storage.Tests.Infrastructure;
using FASTER.core;

namespace Dse.Storage.Tests;

/// <summary>
/// <see cref="PoolSafeCommitManager"/>: FASTER's device commit manager with its blocking calls moved off thread-pool
/// threads, everything else forwarded.
/// </summary>
public sealed class PoolSafeCommitManagerTests
{
    private static readonly TimeSpan Timeout = TimeSpan.FromSeconds(60);

    private static PoolSafeCommitManager Open(string directory) =>
        new(new DeviceLogCommitCheckpointManager(new LocalStorageNamedDeviceFactory(), new DefaultCheckpointNamingScheme(directory)));

    [Fact]
    public async Task Commit_OnAPoolThread_RunsOnTheWriterThreadAndOtherwiseInline()
    {
        using var directory = new TempDirectory();
        using var manager = Open(directory.Path);
        byte[] metadata = [1, 2, 3];

        // A dedicated (non-pool) thread commits inline.
        var inline = new Thread(() => manager.Commit(0, 64, metadata, 1, forceWriteMetadata: true));
        inline.Start();
        Assert.True(inline.Join(Timeout));
        Assert.Equal(0, manager.OffloadedCalls);

        await Task.Run(() => manager.Commit(0, 128, metadata, 2, forceWriteMetadata: true)).WaitAsync(Timeout);
        Assert.Equal(1, manager.OffloadedCalls);

        // What the writer thread wrote is what the inner manager reads back.
        var commits = await Task.Run(() => manager.ListCommits().ToList()).WaitAsync(Timeout);
        Assert.Contains(2L, commits);
        var read = await Task.Run(() => manager.GetCommitMetadata(2)).WaitAsync(Timeout);
        Assert.Equal(metadata, read.AsSpan(0, metadata.Length).ToArray());   // padded to the device's sector size
        Assert.True(manager.OffloadedCalls >= 3);
    }

    [Fact]
    public async Task FasterLog_CommitsThroughTheWrapper_ReopenRecoversEveryEntry()
    {
        using var directory = new TempDirectory();
        string commits = Path.Combine(directory.Path, "commits");
        var entries = Enumerable.Range(0, 100).Select(i => new byte[] { (byte)i, (byte)(i * 3) }).ToList();
        var manager = Open(commits);
        using (var device = DseDevices.CreateLocalFile(Path.Combine(directory.Path, "log", "log.seg")))
        using (var log = new FasterLog(Settings(device, manager)))
        {
            foreach (var entry in entries)
            {
                log.Enqueue(entry);
            }

            // Committed from a pool thread, as a service's group commit does (FASTER may call the manager on another).
            await Task.Run(async () => await log.CommitAsync()).WaitAsync(Timeout);
        }

        manager.Dispose();
        using var reopenedManager = Open(commits);
        using var reopenedDevice = DseDevices.CreateLocalFile(Path.Combine(directory.Path, "log", "log.seg"));

        // Recovery lists the commits and reads the newest one's metadata: from a pool thread, through the writer thread.
        using var recovered = await Task.Run(() => new FasterLog(Settings(reopenedDevice, reopenedManager))).WaitAsync(Timeout);
        Assert.True(reopenedManager.OffloadedCalls > 0);
        var read = new List<byte[]>();
        using (var iterator = recovered.Scan(recovered.BeginAddress, recovered.TailAddress))
        {
            while (iterator.GetNext(out byte[] entry, out int length, out _, out _))
            {
                read.Add(entry.AsSpan(0, length).ToArray());
            }
        }

        Assert.Equal(entries, read);
    }

    [Fact]
    public async Task Dispose_AfterOffloadedCalls_StopsTheWriterOnce()
    {
        using var directory = new TempDirectory();
        var manager = Open(directory.Path);
        await Task.Run(() => manager.Commit(0, 64, [7], 1, forceWriteMetadata: true)).WaitAsync(Timeout);

        // Dispose waits for the writer thread to end (a hang here would be a writer that never stops), and is idempotent.
        await Task.Run(manager.Dispose).WaitAsync(Timeout);
        manager.Dispose();

        Assert.Equal(1, manager.OffloadedCalls);
    }

    [Fact]
    public async Task Commit_InnerThrowsOnTheWriterThread_CallerGetsTheSameException()
    {
        using var directory = new TempDirectory();
        using var manager = new PoolSafeCommitManager(new DeviceLogCommitCheckpointManager(new NoDevices(), new DefaultCheckpointNamingScheme(directory.Path)));

        var error = await Assert.ThrowsAsync<InvalidOperationException>(() => Task.Run(() => manager.Commit(0, 64, [1], 1, forceWriteMetadata: true)));

        Assert.Equal(NoDevices.Message, error.Message);
        Assert.Equal(1, manager.OffloadedCalls);

        // The writer thread survived the failure: the next call is served (and fails the same way).
        await Assert.ThrowsAsync<InvalidOperationException>(() => Task.Run(() => manager.Commit(0, 64, [1], 2, forceWriteMetadata: true)));
        Assert.Equal(2, manager.OffloadedCalls);
    }

    [Fact]
    public void Constructor_NullInner_Throws() =>
        Assert.Throws<ArgumentNullException>(() => new PoolSafeCommitManager(null!));

    private static FasterLogSettings Settings(IDevice device, ILogCommitManager manager) => new()
    {
        LogDevice = device,
        PageSize = 1 << 12,
        MemorySize = 1 << 14,
        LogCommitManager = manager,
        AutoCommit = false,
    };

    /// <summary>A device factory that cannot create devices, so every commit of the inner manager throws.</summary>
    private sealed class NoDevices : INamedDeviceFactory
    {
        public const string Message = "no devices here";

        public void Initialize(string baseName)
        {
        }

        public IDevice Get(FileDescriptor fileInfo) => throw new InvalidOperationException(Message);

        public IEnumerable<FileDescriptor> ListContents(string path) => [];

        public void Delete(FileDescriptor fileInfo)
        {
        }
    }
}
