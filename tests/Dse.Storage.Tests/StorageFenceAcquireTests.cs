using Azure.Storage.Blobs;
using Dse.Storage.Tests.Infrastructure;

namespace Dse.Storage.Tests;

/// <summary>
/// <see cref="StorageFence.Acquire"/> and <see cref="StorageFence.AcquireDirectory"/>, the fences taken without waiting
/// (for stores that open in a constructor), and <see cref="StorageFence.Dispose"/>.
/// </summary>
public sealed class StorageFenceAcquireTests : IDisposable
{
    private readonly TempDirectory _directory = new();

    public void Dispose() => _directory.Dispose();

    [Fact]
    public void Acquire_LocalFilesAlreadyFenced_RefusedNamingTheLockFileUntilDisposed()
    {
        string path = Path.Combine(_directory.Path, "log");
        using var first = DseDevices.CreateLocalFile(path);
        using var second = DseDevices.CreateLocalFile(path).WithFaults();
        var held = StorageFence.Acquire(first);
        Assert.True(held.IsExclusive);
        Assert.True(held.ReleasedByProcessExit);

        var refused = Assert.Throws<StorageFencedException>(() => StorageFence.Acquire(second));
        Assert.Contains(StorageFence.LockFilePath(path), refused.Message, StringComparison.Ordinal);
        Assert.Contains("owned by another instance", refused.Message, StringComparison.Ordinal);

        held.Dispose();
        using var next = StorageFence.Acquire(second);
        Assert.True(next.IsExclusive);
    }

    [Fact]
    public async Task Acquire_SameLockAsAcquireAsync_EachRefusesTheOther()
    {
        string path = Path.Combine(_directory.Path, "log");
        using var device = DseDevices.CreateLocalFile(path);
        await using (var asynchronous = await StorageFence.AcquireAsync(device))
        {
            Assert.Throws<StorageFencedException>(() => StorageFence.Acquire(device));
        }

        using var synchronous = StorageFence.Acquire(device);
        await Assert.ThrowsAsync<StorageFencedException>(() => StorageFence.AcquireAsync(device).AsTask());
    }

    [Fact]
    public void Acquire_InMemoryDevice_HoldsNothing()
    {
        using var device = DseDevices.CreateInMemory();

        using var fence = StorageFence.Acquire(device);
        using var again = StorageFence.Acquire(device);

        Assert.False(fence.IsExclusive);
        Assert.False(fence.CanBeLost);
    }

    [Fact]
    public void Acquire_PageBlobDevice_RefusedBecauseALeaseNeedsAcquireAsync()
    {
        // Never contacted: the refusal comes before any request.
        var container = new BlobContainerClient(new Uri("http://127.0.0.1:9/devstoreaccount1/none"));
        using var device = DseDevices.CreateAzurePageBlob(container, "log");

        var refused = Assert.Throws<NotSupportedException>(() => StorageFence.Acquire(device.WithLatency(TimeSpan.Zero)));

        Assert.Contains("AcquireAsync", refused.Message, StringComparison.Ordinal);
    }

    [Fact]
    public void AcquireDirectory_AlreadyFenced_RefusedNamingTheLockFileInsideTheDirectoryUntilDisposed()
    {
        string directory = Path.Combine(_directory.Path, "store");
        var held = StorageFence.AcquireDirectory(directory);
        string lockFile = StorageFence.DirectoryLockFilePath(directory);
        Assert.Equal(Path.Combine(directory, ".owner.lock"), lockFile);
        Assert.True(File.Exists(lockFile));
        Assert.Contains(lockFile, held.Description, StringComparison.Ordinal);

        var refused = Assert.Throws<StorageFencedException>(() => StorageFence.AcquireDirectory(directory + Path.DirectorySeparatorChar));
        Assert.Contains($"The storage at '{directory}'", refused.Message, StringComparison.Ordinal);
        Assert.Contains(lockFile, refused.Message, StringComparison.Ordinal);

        held.Dispose();
        using var next = StorageFence.AcquireDirectory(directory);
        Assert.True(next.IsExclusive);
    }

    [Fact]
    public async Task Dispose_ThenDisposeAsync_ReleasesOnce()
    {
        var fence = StorageFence.AcquireDirectory(_directory.Path);

        fence.Dispose();
        await fence.DisposeAsync();

        using var next = StorageFence.AcquireDirectory(_directory.Path);
        Assert.False(next.IsLost);
    }
}
