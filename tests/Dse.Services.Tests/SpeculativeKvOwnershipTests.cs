using Dse.Storage;
using Dse.StoreOwner;
using Dse.Testing;

namespace Dse.Services.Tests;

/// <summary>
/// <see cref="SpeculativeKvOptions.ExclusiveStorage"/>: one instance owns a store's directory from construction to
/// dispose, in this process and across processes (<c>Dse.StoreOwner</c> is the other process).
/// </summary>
[Trait("Category", "Recovery")]
public sealed class SpeculativeKvOwnershipTests : IDisposable
{
    private static readonly TimeSpan ProcessTimeout = TimeSpan.FromSeconds(90);

    private readonly TempDirectory _directory = new();

    public void Dispose() => _directory.Dispose();

    [Fact]
    public async Task Constructor_SameDirectoryWhileFirstIsOpen_RefusedNamingTheLockFileAndChangesNothing()
    {
        await using (var coordinator = new ClusterCoordinator())
        await using (var first = ServiceStores.CreateKv(_directory.Path))
        {
            await first.ConnectAsync(coordinator);
            await ServiceStores.PutOrdersAsync(first, 1, 3);
            var before = DirectoryContents.Snapshot(_directory.Path);

            var refused = Assert.Throws<StorageFencedException>(() => ServiceStores.CreateKv(_directory.Path));

            Assert.StartsWith("SpeculativeKv 1 cannot open", refused.Message, StringComparison.Ordinal);
            Assert.Contains(StorageFence.DirectoryLockFilePath(_directory.Path), refused.Message, StringComparison.Ordinal);
            Assert.Contains("owned by another instance", refused.Message, StringComparison.Ordinal);
            Assert.Equal(before, DirectoryContents.Snapshot(_directory.Path));

            // The first instance goes on as if nothing happened.
            await ServiceStores.PutOrdersAsync(first, 4, 1);
        }

        await AssertOrdersAsync(4);
    }

    [Fact]
    public async Task Constructor_ExclusiveStorageOff_TakesNoLock()
    {
        await using var owner = ServiceStores.CreateKv(_directory.Path);

        // Nothing is asked for, so nothing is refused (which is why the default is on).
        await using var unfenced = new SpeculativeKv(ServiceStores.Options(), new SpeculativeKvOptions
        {
            Directory = _directory.Path,
            ExclusiveStorage = false,
        });

        Assert.False(unfenced.IsConnected);
    }

    [Fact]
    [Trait("Category", "MultiProcess")]
    public async Task Constructor_InAnotherProcessWhileThisOneHoldsTheStore_RefusedChangingNothingThenOpensOnceDisposed()
    {
        await using (var coordinator = new ClusterCoordinator())
        await using (var held = ServiceStores.CreateKv(_directory.Path))
        {
            await held.ConnectAsync(coordinator);
            await ServiceStores.PutOrdersAsync(held, 1, 2);
            var before = DirectoryContents.Snapshot(_directory.Path);

            var refused = await RunOwnerAsync("write", 3, 30);

            Assert.True(refused.ExitCode == 3, refused.Describe());
            string line = Assert.Single(refused.OutputLines);
            Assert.StartsWith("REFUSED SpeculativeKv 1 cannot open", line, StringComparison.Ordinal);
            Assert.Contains(StorageFence.DirectoryLockFilePath(_directory.Path), line, StringComparison.Ordinal);
            Assert.Equal(before, DirectoryContents.Snapshot(_directory.Path));
        }

        var wrote = await RunOwnerAsync("write", 3, 30);

        Assert.True(wrote.ExitCode == 0, wrote.Describe());
        await AssertOrdersAsync(32);
    }

    [Fact]
    [Trait("Category", "MultiProcess")]
    public async Task Constructor_WhileAnotherProcessHoldsTheStore_RefusedUntilThatProcessIsKilledNine()
    {
        await using var owner = ChildProgram.Start("tests/Dse.StoreOwner", "Dse.StoreOwner.dll", ["speculative-kv", _directory.Path, "hold", "1", "30"]);
        Assert.Equal("READY 30", await owner.WaitForLineAsync("READY", ProcessTimeout));

        var refused = Assert.Throws<StorageFencedException>(() => ServiceStores.CreateKv(_directory.Path));
        Assert.Contains("owned by another instance", refused.Message, StringComparison.Ordinal);

        // kill -9: no dispose ran, yet the kernel dropped the lock with the process; its 30 committed orders are there.
        await owner.KillHardAsync();
        await AssertOrdersAsync(30);
    }

    /// <summary>Opens the store as a restarted process would and checks it holds exactly orders 1 to <paramref name="count"/>.</summary>
    private async Task AssertOrdersAsync(int count)
    {
        await using var coordinator = new ClusterCoordinator();
        await using var kv = ServiceStores.CreateKv(_directory.Path);
        await kv.ConnectAsync(coordinator);
        for (int n = 1; n <= count + 1; n++)
        {
            Assert.Equal(n <= count ? ServiceStores.Order(n) : null, await ServiceStores.GetAsync(kv, ServiceStores.Order(n)));
        }
    }

    private Task<ProgramRun> RunOwnerAsync(string mode, long first, int count) =>
        BuiltProgram.RunAsync("tests/Dse.StoreOwner", "Dse.StoreOwner.dll", ["speculative-kv", _directory.Path, mode, $"{first}", $"{count}"], ProcessTimeout);
}
