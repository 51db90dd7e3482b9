using Azure.Storage.Blobs;
using Dse.Storage.Tests.Infrastructure;
using Dse.StoreOwner;
using Dse.Testing;

namespace Dse.Storage.Tests;

/// <summary>
/// <see cref="SnapshotLogOptions.ExclusiveStorage"/> on local files: one instance owns a log's files from open to dispose,
/// in this process and across processes (<c>Dse.StoreOwner</c> is the other process).
/// </summary>
[Trait("Category", "Recovery")]
public sealed class SnapshotLogOwnershipTests : IDisposable
{
    private static readonly TimeSpan ProcessTimeout = TimeSpan.FromSeconds(90);

    private readonly TempDirectory _directory = new("dse-snapshot-owner-");

    private string LogPath => Path.Combine(_directory.Path, "orders");

    public void Dispose() => _directory.Dispose();

    [Fact]
    public async Task OpenAsync_SameFilesWhileFirstIsOpen_RefusedNamingTheLockFileAndChangesNothing()
    {
        await using (var first = await SnapshotLogStore.OpenAsync(LogPath))
        {
            await SnapshotLogStore.AppendOrdersAsync(first, 1, 3);
            var before = DirectoryContents.Snapshot(_directory.Path);

            var refused = await Assert.ThrowsAsync<StorageFencedException>(() => SnapshotLogStore.OpenAsync(LogPath));

            Assert.Contains(StorageFence.LockFilePath(LogPath), refused.Message, StringComparison.Ordinal);
            Assert.Contains("owned by another instance", refused.Message, StringComparison.Ordinal);
            Assert.Equal(before, DirectoryContents.Snapshot(_directory.Path));

            // The first instance goes on as if nothing happened.
            await SnapshotLogStore.AppendOrdersAsync(first, 4, 2);
        }

        // Disposed: the next open works and holds exactly what the first instance acknowledged.
        await using var reopened = await SnapshotLogStore.OpenAsync(LogPath);
        AssertOrders(reopened, 5);
    }

    [Fact]
    public async Task OpenAsync_ExclusiveStorageOff_TakesNoLock()
    {
        await using var owner = await SnapshotLogStore.OpenAsync(LogPath);
        using var device = DseDevices.CreateLocalFile(LogPath);

        // Nothing is asked for, so nothing is refused (which is why the default is on).
        await using var unfenced = await SnapshotLog.OpenAsync(device, new SnapshotLogOptions { SegmentSize = 1 << 20, ExclusiveStorage = false });

        Assert.Empty(unfenced.Records);
    }

    [Fact]
    public async Task OpenAsync_InMemoryDevices_NeedNoLock()
    {
        var storage = new InMemoryStorage();
        await using var first = await SnapshotLog.OpenAsync(new InMemoryDevice(storage), new SnapshotLogOptions { SegmentSize = 1 << 16, OwnsDevice = true });
        await first.AppendAsync(1, SnapshotLogStore.Order(1));

        await using var second = await SnapshotLog.OpenAsync(new InMemoryDevice(storage), new SnapshotLogOptions { SegmentSize = 1 << 16, OwnsDevice = true });

        Assert.Equal([1UL], second.Records.Select(r => r.Key));
    }

    [Fact]
    [Trait("Category", "MultiProcess")]
    public async Task OpenAsync_InAnotherProcessWhileThisOneHoldsTheLog_RefusedChangingNothingThenOpensOnceDisposed()
    {
        var first = await SnapshotLogStore.OpenAsync(LogPath);
        await SnapshotLogStore.AppendOrdersAsync(first, 1, 3);
        var before = DirectoryContents.Snapshot(_directory.Path);

        var refused = await RunOwnerAsync("write", 4, 30);

        Assert.True(refused.ExitCode == 3, refused.Describe());
        string line = Assert.Single(refused.OutputLines);
        Assert.StartsWith("REFUSED Snapshot log cannot open", line, StringComparison.Ordinal);
        Assert.Contains(StorageFence.LockFilePath(LogPath), line, StringComparison.Ordinal);
        Assert.Contains("owned by another instance", line, StringComparison.Ordinal);
        Assert.Equal(before, DirectoryContents.Snapshot(_directory.Path));
        await SnapshotLogStore.AppendOrdersAsync(first, 4, 1);
        await first.DisposeAsync();

        var wrote = await RunOwnerAsync("write", 5, 30);

        Assert.True(wrote.ExitCode == 0, wrote.Describe());
        Assert.Equal(["WROTE 30"], wrote.OutputLines);
        await using var reopened = await SnapshotLogStore.OpenAsync(LogPath);
        AssertOrders(reopened, 34);
    }

    [Fact]
    [Trait("Category", "MultiProcess")]
    public async Task OpenAsync_WhileAnotherProcessHoldsTheLog_RefusedUntilThatProcessIsKilledNine()
    {
        await using var owner = ChildProgram.Start("tests/Dse.StoreOwner", "Dse.StoreOwner.dll", ["snapshot-log", LogPath, "hold", "1", "30"]);
        Assert.Equal("READY 30", await owner.WaitForLineAsync("READY", ProcessTimeout));

        var refused = await Assert.ThrowsAsync<StorageFencedException>(() => SnapshotLogStore.OpenAsync(LogPath));
        Assert.Contains(StorageFence.LockFilePath(LogPath), refused.Message, StringComparison.Ordinal);

        // kill -9: no dispose ran, yet the kernel dropped the lock with the process; its 30 acknowledged orders are there.
        await owner.KillHardAsync();
        await using var log = await SnapshotLogStore.OpenAsync(LogPath);
        AssertOrders(log, 30);
    }

    [Fact]
    [Trait("Category", "MultiProcess")]
    public async Task OpenAsync_AnotherProcessDisposedTheLog_OpensWithWhatItWrote()
    {
        await using (var owner = ChildProgram.Start("tests/Dse.StoreOwner", "Dse.StoreOwner.dll", ["snapshot-log", LogPath, "hold", "1", "3"]))
        {
            await owner.WaitForLineAsync("READY", ProcessTimeout);
            await owner.CloseInputAsync();
            Assert.True(owner.ExitCode == 0, await owner.DescribeAsync());
        }

        await using var log = await SnapshotLogStore.OpenAsync(LogPath);
        AssertOrders(log, 3);
    }

    private static void AssertOrders(SnapshotLog log, int count)
    {
        Assert.Equal(Enumerable.Range(1, count).Select(k => (ulong)k), log.Records.Select(r => r.Key));
        foreach (var record in log.Records)
        {
            Assert.Equal(SnapshotLogStore.Order((long)record.Key), record.Payload.ToArray());
        }
    }

    private Task<ProgramRun> RunOwnerAsync(string mode, long first, int count) =>
        BuiltProgram.RunAsync("tests/Dse.StoreOwner", "Dse.StoreOwner.dll", ["snapshot-log", LogPath, mode, $"{first}", $"{count}"], ProcessTimeout);
}

/// <summary>
/// <see cref="SnapshotLogOptions.ExclusiveStorage"/> on page blobs (Azurite): a new instance takes the storage over, and
/// the old one's appends are refused without changing what the new one sees.
/// </summary>
[Collection(AzuriteCollection.Name)]
[Trait("Category", "Azure")]
[Trait("Category", "Recovery")]
public sealed class AzurePageBlobSnapshotLogOwnershipTests(AzuriteFixture azurite) : IAsyncLifetime
{
    private readonly BlobContainerClient _container = new(azurite.ConnectionString, "o" + Guid.NewGuid().ToString("N"));

    public Task InitializeAsync() => Task.CompletedTask;

    public async Task DisposeAsync() => await _container.DeleteIfExistsAsync();

    [Fact]
    public async Task OpenAsync_SecondInstance_TakesOverAndTheFirstInstancesAppendsAreFenced()
    {
        await using var first = await OpenAsync();
        await SnapshotLogStore.AppendOrdersAsync(first, 1, 2);

        await using var second = await OpenAsync();
        await SnapshotLogStore.AppendOrdersAsync(second, 3, 1);
        var fenced = await Assert.ThrowsAsync<StorageFencedException>(() => first.AppendAsync(4, SnapshotLogStore.Order(4)).AsTask());

        Assert.Contains("was fenced", fenced.Message, StringComparison.Ordinal);
        Assert.Equal([1UL, 2UL], first.Records.Select(r => r.Key));

        // Fenced for good: the next append is refused before it writes anything.
        await Assert.ThrowsAsync<StorageFencedException>(() => first.AppendAsync(5, SnapshotLogStore.Order(5)).AsTask());
        await second.DisposeAsync();
        await using var third = await OpenAsync();
        Assert.Equal([1UL, 2UL, 3UL], third.Records.Select(r => r.Key));
    }

    private Task<SnapshotLog> OpenAsync() =>
        SnapshotLog.OpenAsync(DseDevices.CreateAzurePageBlob(_container, "orders"), new SnapshotLogOptions { SegmentSize = 1 << 16, OwnsDevice = true });
}
