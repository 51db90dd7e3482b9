using Azure.Storage.Blobs;
using Dse.Storage;
using Dse.StoreOwner;
using Dse.Testing;

namespace Dse.Services.Tests;

/// <summary>
/// <see cref="SpeculativeLogOptions.ExclusiveStorage"/>: one instance owns a log's files and commit directory from
/// construction to dispose, in this process and across processes (<c>Dse.StoreOwner</c> is the other process).
/// </summary>
[Trait("Category", "Recovery")]
public sealed class SpeculativeLogOwnershipTests : IDisposable
{
    private static readonly TimeSpan ProcessTimeout = TimeSpan.FromSeconds(90);

    private readonly TempDirectory _directory = new();

    private string LogFiles => Path.Combine(_directory.Path, "log", "entries");

    private string CommitDirectory => Path.Combine(_directory.Path, "commits");

    public void Dispose() => _directory.Dispose();

    [Fact]
    public async Task Constructor_SameStorageWhileFirstIsOpen_RefusedNamingTheLockFileAndChangesNothing()
    {
        await using (var coordinator = new ClusterCoordinator())
        await using (var first = ServiceStores.CreateLog(_directory.Path))
        {
            await first.ConnectAsync(coordinator);
            await ServiceStores.AppendOrdersAsync(first, 1, 3);
            var before = DirectoryContents.Snapshot(_directory.Path);

            var refused = Assert.Throws<StorageFencedException>(() => ServiceStores.CreateLog(_directory.Path));

            Assert.StartsWith("SpeculativeLog 1 cannot open", refused.Message, StringComparison.Ordinal);
            Assert.Contains(StorageFence.LockFilePath(LogFiles), refused.Message, StringComparison.Ordinal);
            Assert.Contains("owned by another instance", refused.Message, StringComparison.Ordinal);
            Assert.Equal(before, DirectoryContents.Snapshot(_directory.Path));

            // The first instance goes on as if nothing happened.
            await ServiceStores.AppendOrdersAsync(first, 4, 1);
        }

        await AssertOrdersAsync(4);
    }

    [Fact]
    public async Task Constructor_SameCommitDirectoryOtherLogFiles_RefusedNamingTheCommitLockAndReleasesTheLogLock()
    {
        await using var first = ServiceStores.CreateLog(_directory.Path);
        string otherFiles = Path.Combine(_directory.Path, "other", "entries");

        var refused = Assert.Throws<StorageFencedException>(() => new SpeculativeLog(ServiceStores.Options(), new SpeculativeLogOptions
        {
            LogDevice = DseDevices.CreateLocalFile(otherFiles),
            CommitDirectory = CommitDirectory,
            OwnsStorage = true,
        }));

        Assert.Contains(StorageFence.DirectoryLockFilePath(CommitDirectory), refused.Message, StringComparison.Ordinal);

        // The lock it took on its own log files was given back.
        using var otherDevice = DseDevices.CreateLocalFile(otherFiles);
        using var fence = StorageFence.Acquire(otherDevice);
        Assert.True(fence.IsExclusive);
    }

    [Fact]
    public async Task Constructor_ExclusiveStorageOff_TakesNoLock()
    {
        await using var owner = ServiceStores.CreateLog(_directory.Path);

        // Nothing is asked for, so nothing is refused (which is why the default is on).
        await using var unfenced = new SpeculativeLog(ServiceStores.Options(), new SpeculativeLogOptions
        {
            LogDevice = DseDevices.CreateLocalFile(LogFiles),
            CommitDirectory = CommitDirectory,
            OwnsStorage = true,
            ExclusiveStorage = false,
        });

        Assert.Equal(owner.TailLsn, unfenced.TailLsn);
    }

    [Fact]
    public void Constructor_PageBlobDevice_RefusedNamingExclusiveStorageAndAcquireAsync()
    {
        // Never contacted: the refusal comes before any request.
        var container = new BlobContainerClient(new Uri("http://127.0.0.1:9/devstoreaccount1/none"));

        var refused = Assert.Throws<ArgumentException>(() => new SpeculativeLog(ServiceStores.Options(), new SpeculativeLogOptions
        {
            LogDevice = DseDevices.CreateAzurePageBlob(container, "entries"),
            CommitDirectory = CommitDirectory,
            OwnsStorage = true,
        }));

        Assert.Contains("StorageFence.AcquireAsync", refused.Message, StringComparison.Ordinal);
        Assert.Contains("SpeculativeLogOptions.ExclusiveStorage", refused.Message, StringComparison.Ordinal);

        // Nothing is left locked: the commit directory opens.
        using var commits = StorageFence.AcquireDirectory(CommitDirectory);
    }

    [Fact]
    [Trait("Category", "MultiProcess")]
    public async Task Constructor_InAnotherProcessWhileThisOneHoldsTheLog_RefusedChangingNothingThenOpensOnceDisposed()
    {
        await using (var coordinator = new ClusterCoordinator())
        await using (var held = ServiceStores.CreateLog(_directory.Path))
        {
            await held.ConnectAsync(coordinator);
            await ServiceStores.AppendOrdersAsync(held, 1, 2);
            var before = DirectoryContents.Snapshot(_directory.Path);

            var refused = await RunOwnerAsync("write", 3, 30);

            Assert.True(refused.ExitCode == 3, refused.Describe());
            string line = Assert.Single(refused.OutputLines);
            Assert.StartsWith("REFUSED SpeculativeLog 1 cannot open", line, StringComparison.Ordinal);
            Assert.Contains(StorageFence.LockFilePath(LogFiles), line, StringComparison.Ordinal);
            Assert.Equal(before, DirectoryContents.Snapshot(_directory.Path));
        }

        var wrote = await RunOwnerAsync("write", 3, 30);

        Assert.True(wrote.ExitCode == 0, wrote.Describe());
        await AssertOrdersAsync(32);
    }

    [Fact]
    [Trait("Category", "MultiProcess")]
    public async Task Constructor_WhileAnotherProcessHoldsTheLog_RefusedUntilThatProcessIsKilledNine()
    {
        await using var owner = ChildProgram.Start("tests/Dse.StoreOwner", "Dse.StoreOwner.dll", ["speculative-log", _directory.Path, "hold", "1", "30"]);
        Assert.Equal("READY 30", await owner.WaitForLineAsync("READY", ProcessTimeout));

        var refused = Assert.Throws<StorageFencedException>(() => ServiceStores.CreateLog(_directory.Path));
        Assert.Contains("owned by another instance", refused.Message, StringComparison.Ordinal);

        // kill -9: no dispose ran, yet the kernel dropped both locks with the process; its 30 committed orders are there.
        await owner.KillHardAsync();
        await AssertOrdersAsync(30);
    }

    /// <summary>Opens the log as a restarted process would and checks it holds exactly orders 1 to <paramref name="count"/>.</summary>
    private async Task AssertOrdersAsync(int count)
    {
        await using var coordinator = new ClusterCoordinator();
        await using var log = ServiceStores.CreateLog(_directory.Path);
        await log.ConnectAsync(coordinator);
        Assert.Equal(Enumerable.Range(1, count).Select(n => ServiceStores.Order(n)), await ServiceStores.ReadEntriesAsync(log));
    }

    private Task<ProgramRun> RunOwnerAsync(string mode, long first, int count) =>
        BuiltProgram.RunAsync("tests/Dse.StoreOwner", "Dse.StoreOwner.dll", ["speculative-log", _directory.Path, mode, $"{first}", $"{count}"], ProcessTimeout);
}
