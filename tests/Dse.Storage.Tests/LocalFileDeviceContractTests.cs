using Dse.Storage.Tests.Infrastructure;

namespace Dse.Storage.Tests;

/// <summary>The device contract on FASTER's local file device.</summary>
public sealed class LocalFileDeviceContractTests : DeviceContractTests
{
    protected override DeviceHarness CreateHarness() => new LocalFileHarness();

    [Fact]
    public void CreateLocalFile_DefaultOptions_UsesFasterManagedDeviceWithSectorSize512()
    {
        var device = Harness.Open();

        Assert.Equal(512u, device.SectorSize);
        Assert.EndsWith("segment", device.FileName, StringComparison.Ordinal);
        if (!OperatingSystem.IsWindows())
        {
            Assert.IsType<FASTER.core.ManagedLocalStorageDevice>(device);
        }
    }

    [Fact]
    public async Task Dispose_DeleteOnClose_RemovesSegmentFiles()
    {
        using var directory = new TempDirectory();
        var device = DseDevices.CreateLocalFile(Path.Combine(directory.Path, "log"), new LocalFileDeviceOptions { DeleteOnClose = true });
        device.Initialize(SegmentSize);
        await TestIo.WriteOkAsync(device, 0, TestIo.Pattern(4096, 1));
        Assert.True(File.Exists(Path.Combine(directory.Path, "log.0")));

        device.Dispose();

        Assert.False(File.Exists(Path.Combine(directory.Path, "log.0")));
    }
}
