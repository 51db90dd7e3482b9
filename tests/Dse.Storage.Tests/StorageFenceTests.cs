using Azure.Storage.Blobs;
using Dse.Storage.Tests.Infrastructure;
using Dse.Testing;

namespace Dse.Storage.Tests;

/// <summary><see cref="StorageFence"/> on local files and devices without shared storage.</summary>
public sealed class StorageFenceTests
{
    [Fact]
    public async Task AcquireAsync_LocalFilesAlreadyFenced_RefusedNamingTheLockFileUntilReleased()
    {
        using var directory = new TempDirectory();
        string path = Path.Combine(directory.Path, "log");
        using var first = DseDevices.CreateLocalFile(path);
        using var second = DseDevices.CreateLocalFile(path);
        var held = await StorageFence.AcquireAsync(first);
        Assert.True(held.IsExclusive);
        Assert.True(held.ReleasedByProcessExit);
        Assert.False(held.CanBeLost);

        var refused = await Assert.ThrowsAsync<StorageFencedException>(() => StorageFence.AcquireAsync(second).AsTask());
        Assert.Contains(StorageFence.LockFilePath(path), refused.Message, StringComparison.Ordinal);
        Assert.Contains("owned by another instance", refused.Message, StringComparison.Ordinal);

        // The refusal took nothing: the holder still holds, and once it lets go the next one gets it.
        await TestIo.WriteOkAsync(first, 0, TestIo.Pattern(512, 1));
        await held.DisposeAsync();
        await using var next = await StorageFence.AcquireAsync(second);
        Assert.Equal(TestIo.Pattern(512, 1), await TestIo.ReadOkAsync(second, 0, 512));
    }

    [Fact]
    public async Task AcquireAsync_WrappedLocalFileDevice_FencesTheInnerFiles()
    {
        using var directory = new TempDirectory();
        string path = Path.Combine(directory.Path, "log");
        using var wrapped = DseDevices.CreateLocalFile(path).WithFaults().WithLatency(TimeSpan.Zero);
        using var plain = DseDevices.CreateLocalFile(path);
        await using var held = await StorageFence.AcquireAsync(wrapped);

        await Assert.ThrowsAsync<StorageFencedException>(() => StorageFence.AcquireAsync(plain).AsTask());
    }

    [Fact]
    public void LockFilePath_DevicePath_IsHiddenFileNotMatchingTheSegmentNames()
    {
        string path = Path.Combine(Path.GetTempPath(), "dir", "darq.log");

        string lockFile = StorageFence.LockFilePath(path);

        Assert.Equal(Path.Combine(Path.GetTempPath(), "dir", ".darq.log.lock"), lockFile);
        Assert.False(Path.GetFileName(lockFile).StartsWith("darq.log", StringComparison.Ordinal));
    }

    [Fact]
    public async Task AcquireAsync_InMemoryDevice_HoldsNothingAndNeverLost()
    {
        using var device = DseDevices.CreateInMemory();

        await using var fence = await StorageFence.AcquireAsync(device);
        await using var again = await StorageFence.AcquireAsync(device);

        Assert.False(fence.IsExclusive);
        Assert.False(fence.CanBeLost);
        Assert.False(fence.IsLost);
    }
}

/// <summary>Page blob leases (<see cref="AzurePageBlobDevice.AcquireLeaseAsync"/>): takeover and fencing, on Azurite.</summary>
[Collection(AzuriteCollection.Name)]
[Trait("Category", "Azure")]
public sealed class AzurePageBlobFenceTests(AzuriteFixture azurite) : IAsyncLifetime
{
    private const long SegmentSize = 1 << 16;

    private readonly BlobContainerClient _container = new(azurite.ConnectionString, "f" + Guid.NewGuid().ToString("N"));

    public Task InitializeAsync() => Task.CompletedTask;

    public async Task DisposeAsync() => await _container.DeleteIfExistsAsync();

    [Fact]
    public async Task AcquireLeaseAsync_SecondInstanceTakesOver_FirstInstanceWritesAreRefusedAsFenced()
    {
        using var first = Device();
        await first.AcquireLeaseAsync();
        await TestIo.WriteOkAsync(first, 0, TestIo.Pattern(512, 1));

        // A crashed or partitioned owner's infinite lease does not block the next one: it is broken.
        using var second = Device();
        await second.AcquireLeaseAsync();
        Assert.NotEqual(first.LeaseId, second.LeaseId);

        Assert.Equal(DeviceErrorCodes.Fenced, await TestIo.WriteAsync(first, 0, TestIo.Pattern(512, 2)));
        Assert.True(first.IsFenced);

        // Fenced for good, also for a segment the new owner has not touched yet.
        Assert.Equal(DeviceErrorCodes.Fenced, await TestIo.WriteAsync(first, (ulong)SegmentSize, TestIo.Pattern(512, 3)));

        await TestIo.WriteOkAsync(second, 512, TestIo.Pattern(512, 4));
        Assert.Equal(TestIo.Pattern(512, 1), await TestIo.ReadOkAsync(second, 0, 512));
        Assert.False(second.IsFenced);
    }

    [Fact]
    public async Task AcquireLeaseAsync_OldOwnerCreatesSegmentAfterTakeover_FindsItLostAndWritesNothing()
    {
        using var first = Device();
        await first.AcquireLeaseAsync();
        await TestIo.WriteOkAsync(first, 0, TestIo.Pattern(512, 1));
        using var second = Device();
        await second.AcquireLeaseAsync();

        // The old owner's first touch of a new segment: it leases the new blob, then finds the owner blob's lease gone.
        Assert.Equal(DeviceErrorCodes.Fenced, await TestIo.WriteAsync(first, 2 * (ulong)SegmentSize, TestIo.Pattern(512, 5)));
        Assert.True(first.IsFenced);

        // The new owner takes that segment over on its first write there.
        await TestIo.WriteOkAsync(second, 2 * (ulong)SegmentSize, TestIo.Pattern(512, 6));
        Assert.Equal(TestIo.Pattern(512, 6), await TestIo.ReadOkAsync(second, 2 * (ulong)SegmentSize, 512));
    }

    [Fact]
    public async Task ReleaseLeaseAsync_AfterRelease_UnleasedDeviceWritesAgain()
    {
        using (var owner = Device())
        {
            await owner.AcquireLeaseAsync();
            await TestIo.WriteOkAsync(owner, 0, TestIo.Pattern(512, 1));
            await owner.ReleaseLeaseAsync();
            Assert.Null(owner.LeaseId);
        }

        // No lease left on any blob: a device that takes none writes.
        using var plain = Device();
        await TestIo.WriteOkAsync(plain, 0, TestIo.Pattern(512, 2));
    }

    [Fact]
    public async Task AcquireLeaseAsync_Twice_RefusedAndKeepsTheLease()
    {
        using var device = Device();
        await device.AcquireLeaseAsync();
        string? lease = device.LeaseId;

        await Assert.ThrowsAsync<InvalidOperationException>(() => device.AcquireLeaseAsync());

        Assert.Equal(lease, device.LeaseId);
        await TestIo.WriteOkAsync(device, 0, TestIo.Pattern(512, 1));
    }

    private AzurePageBlobDevice Device()
    {
        var device = DseDevices.CreateAzurePageBlob(_container, "log");
        device.Initialize(SegmentSize);
        return device;
    }
}
