using Azure.Storage.Blobs;
using Dse.Storage.Tests.Infrastructure;
using Dse.Testing;
using Microsoft.Extensions.Logging;

namespace Dse.Storage.Tests;

/// <summary>Page blob specifics: blob layout, sizes, request splitting and error reporting.</summary>
[Collection(AzuriteCollection.Name)]
[Trait("Category", "Azure")]
public sealed class AzurePageBlobDeviceTests(AzuriteFixture azurite) : IAsyncLifetime
{
    private const long SegmentSize = 1 << 16;

    private readonly BlobContainerClient _container = new(azurite.ConnectionString, "t" + Guid.NewGuid().ToString("N"));

    public Task InitializeAsync() => Task.CompletedTask;

    public async Task DisposeAsync() => await _container.DeleteIfExistsAsync();

    [Fact]
    public async Task WriteAsync_FirstWriteToSegment_CreatesContainerAndPageBlobOfSegmentSize()
    {
        using var device = DseDevices.CreateAzurePageBlob(_container, "log");
        device.Initialize(SegmentSize);

        await TestIo.WriteOkAsync(device, (ulong)SegmentSize + 512, TestIo.Pattern(512, 1));

        var properties = (await _container.GetBlobClient("log.1").GetPropertiesAsync()).Value;
        Assert.Equal(Azure.Storage.Blobs.Models.BlobType.Page, properties.BlobType);
        Assert.Equal(SegmentSize, properties.ContentLength);
        Assert.Equal("log.1", device.GetBlobName(1));
        Assert.False(await _container.GetBlobClient("log.0").ExistsAsync());
    }

    [Fact]
    public async Task ReadAsync_SegmentNeverWritten_ReportsNotFound()
    {
        using var device = DseDevices.CreateAzurePageBlob(_container, "log");
        device.Initialize(SegmentSize);
        await TestIo.WriteOkAsync(device, 0, TestIo.Pattern(512, 1));

        var (errorCode, bytes, _) = await TestIo.ReadAsync(device, 5 * (ulong)SegmentSize, 512);

        Assert.Equal(DeviceErrorCodes.NotFound, errorCode);
        Assert.Equal(0u, bytes);
    }

    [Fact]
    public async Task WriteAsync_LargerThanOnePutPageRequest_IsSplitAndReadsBack()
    {
        using var device = DseDevices.CreateAzurePageBlob(_container, "big");
        device.Initialize(8L << 20);
        var data = TestIo.Pattern((5 << 20) + 4096, 3);

        await TestIo.WriteOkAsync(device, 4096, data);

        Assert.Equal(data, await TestIo.ReadOkAsync(device, 4096, data.Length));
    }

    [Fact]
    public async Task WriteAsync_Unsegmented_UsesConfiguredBlobSizeAndRejectsWritesBeyondIt()
    {
        using var device = DseDevices.CreateAzurePageBlob(_container, "flat", new AzurePageBlobDeviceOptions { UnsegmentedBlobSize = 1 << 20 });
        device.Initialize(-1);

        await TestIo.WriteOkAsync(device, (1 << 20) - 512, TestIo.Pattern(512, 4));
        uint beyond = await TestIo.WriteAsync(device, 1 << 20, TestIo.Pattern(512, 5));

        Assert.Equal(DeviceErrorCodes.InvalidArgument, beyond);
        Assert.Equal(1 << 20, (await _container.GetBlobClient("flat.0").GetPropertiesAsync()).Value.ContentLength);
    }

    [Fact]
    public async Task WriteAsync_MisalignedLength_ReportsInvalidArgumentWithoutCallingTheService()
    {
        using var device = DseDevices.CreateAzurePageBlob(_container, "log");
        device.Initialize(SegmentSize);

        uint errorCode = await TestIo.WriteAsync(device, 0, new byte[100]);

        Assert.Equal(DeviceErrorCodes.InvalidArgument, errorCode);
        Assert.False(await _container.ExistsAsync());
    }

    [Fact]
    public async Task WriteAsync_ServiceUnreachable_ReportsIoErrorAndLogsInsteadOfThrowing()
    {
        var options = new BlobClientOptions();
        options.Retry.MaxRetries = 0;
        options.Retry.NetworkTimeout = TimeSpan.FromSeconds(5);
        var unreachable = new BlobContainerClient(AzuriteFixture.ConnectionStringFor("127.0.0.1", UnusedPort()), "nowhere", options);
        var logs = new LogCapture();
        using var device = DseDevices.CreateAzurePageBlob(unreachable, "log", logger: logs.CreateLogger<AzurePageBlobDevice>());
        device.Initialize(SegmentSize);

        uint errorCode = await TestIo.WriteAsync(device, 0, new byte[512]);

        Assert.Equal(DeviceErrorCodes.IoError, errorCode);
        Assert.Contains(logs.Entries, e => e.Level == LogLevel.Error && e.EventId.Id == 1201 && e.Exception is not null);
    }

    [Fact]
    public async Task Dispose_ThenWrite_ReportsDisposed()
    {
        var device = DseDevices.CreateAzurePageBlob(_container, "log");
        device.Initialize(SegmentSize);
        device.Dispose();

        uint errorCode = await TestIo.WriteAsync(device, 0, new byte[512]);

        Assert.Equal(DeviceErrorCodes.Disposed, errorCode);
    }

    private static int UnusedPort()
    {
        using var listener = new System.Net.Sockets.TcpListener(System.Net.IPAddress.Loopback, 0);
        listener.Start();
        return ((System.Net.IPEndPoint)listener.LocalEndpoint).Port;
    }
}
