using FASTER.core;

namespace Dse.Storage.Tests.Infrastructure;

/// <summary>FASTER's local file device (direct I/O) on segment files in a temp directory that the harness deletes.</summary>
public sealed class LocalFileHarness : DeviceHarness
{
    private readonly TempDirectory _directory = new();

    public string Directory => _directory.Path;

    /// <summary>FASTER's managed device hands misaligned requests to the OS, which serves them from the page cache.</summary>
    public override bool RejectsMisalignedRequests => false;

    protected override IDevice CreateDevice() => DseDevices.CreateLocalFile(System.IO.Path.Combine(_directory.Path, "segment"));

    protected override ValueTask DisposeStorageAsync()
    {
        _directory.Dispose();
        return ValueTask.CompletedTask;
    }
}
