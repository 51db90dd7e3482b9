using Dse.Testing;
using Xunit.Abstractions;

namespace Dse.Darq.Tests;

/// <summary>
/// Kill -9 of the source DARQ's process in a two-DARQ general-speculation pipeline across processes
/// (<see cref="DarqSpeculativeKillRestart"/>), on local files: the coordinator's log is a file, each DARQ a directory. A
/// failed run keeps its directory (coordinator log, both DARQs) and names it.
/// </summary>
[Trait("Category", "MultiProcess")]
[Trait("Category", "Recovery")]
public sealed class DarqGeneralSpeculationMultiProcessTests(ITestOutputHelper output) : IDisposable
{
    private readonly string _directory = Path.Combine(Path.GetTempPath(), "dse-darq-spec-mp-" + Guid.NewGuid().ToString("N"));
    private bool _passed;

    [Fact]
    public async Task KillNine_SourceOfSpeculativePipeline_DestinationCountsEveryInputExactlyOnce()
    {
        Directory.CreateDirectory(_directory);
        await DarqSpeculativeKillRestart.RunAsync(output, nameof(KillNine_SourceOfSpeculativePipeline_DestinationCountsEveryInputExactlyOnce), 400,
            ["--log", "file:" + Path.Combine(_directory, "coordinator.log")],
            role => ["--dir", Path.Combine(_directory, role)]);
        _passed = true;
    }

    [Theory]
    [InlineData("--dir {dir} --connection UseDevelopmentStorage=true --container c")]
    [InlineData("--dir {dir} --container c")]
    [InlineData("--connection UseDevelopmentStorage=true")]
    [InlineData("--container c")]
    [InlineData("")]
    public async Task GeneralHost_StorageNotExactlyOneOfDirOrBlobs_ExitsWithUsageAndCreatesNothing(string storage)
    {
        string directory = Path.Combine(_directory, "a");
        var arguments = new List<string> { "--general", "--role", "b", "--id", "2", "--coordinator", "http://127.0.0.1:1", "--count", "20" };
        arguments.AddRange(storage.Replace("{dir}", directory, StringComparison.Ordinal).Split(' ', StringSplitOptions.RemoveEmptyEntries));
        var lines = new List<string>();
        await using var host = DarqHostProcess.Start(arguments, lines.Add);
        await host.Completion.WaitAsync(TimeSpan.FromSeconds(60));
        string errors = await host.Errors.WaitAsync(TimeSpan.FromSeconds(60));
        Assert.Equal(2, host.ExitCode);
        Assert.Contains("--general needs either --dir, or --connection and --container (not both)", errors, StringComparison.Ordinal);
        Assert.Empty(lines);
        Assert.False(Directory.Exists(directory), $"{directory} was created although the arguments were refused");
        _passed = true;
    }

    public void Dispose()
    {
        if (_passed && Directory.Exists(_directory))
        {
            Directory.Delete(_directory, recursive: true);
        }
        else
        {
            output.WriteLine($"kept {_directory} (coordinator log and both DARQs)");
        }
    }
}

/// <summary>
/// Kill -9 of the source DARQ's process in a two-DARQ general-speculation pipeline across processes
/// (<see cref="DarqSpeculativeKillRestart"/>), on Azure page blobs (Azurite): each DARQ's log and commit devices in a
/// container of its own, and the coordinator's log an append blob in a third one. The containers are deleted afterwards.
/// </summary>
[Collection(DarqAzuriteCollection.Name)]
[Trait("Category", "MultiProcess")]
[Trait("Category", "Recovery")]
[Trait("Category", "Azure")]
public sealed class DarqGeneralSpeculationPageBlobMultiProcessTests(AzuriteFixture azurite, ITestOutputHelper output) : IAsyncLifetime
{
    private readonly string _prefix = "darq-spec-mp-" + Guid.NewGuid().ToString("N");

    [Fact]
    public async Task KillNine_SourceOfSpeculativePipelineOnPageBlobs_DestinationCountsEveryInputExactlyOnce()
    {
        await DarqSpeculativeKillRestart.RunAsync(output, nameof(KillNine_SourceOfSpeculativePipelineOnPageBlobs_DestinationCountsEveryInputExactlyOnce), 400,
            ["--log", $"blob:{Container("coordinator")}/coordinator.log", "--blob-connection-string", azurite.ConnectionString],
            role => ["--connection", azurite.ConnectionString, "--container", Container(role)]);

        // The run was on blobs: each DARQ's log and commit segments and the coordinator's log are where they were sent.
        await AssertBlobsAsync("a", "darq.log.", "darq.commit.");
        await AssertBlobsAsync("b", "darq.log.", "darq.commit.");
        await AssertBlobsAsync("coordinator", "coordinator.log");
    }

    public Task InitializeAsync() => Task.CompletedTask;

    public async Task DisposeAsync()
    {
        foreach (string name in (string[])["coordinator", "a", "b"])
        {
            await new Azure.Storage.Blobs.BlobContainerClient(azurite.ConnectionString, Container(name)).DeleteIfExistsAsync();
        }
    }

    private string Container(string name) => $"{_prefix}-{name}";

    private async Task AssertBlobsAsync(string name, params string[] prefixes)
    {
        var blobs = new List<string>();
        await foreach (var blob in new Azure.Storage.Blobs.BlobContainerClient(azurite.ConnectionString, Container(name)).GetBlobsAsync())
        {
            blobs.Add(blob.Name);
        }

        foreach (string prefix in prefixes)
        {
            Assert.True(blobs.Exists(blob => blob.StartsWith(prefix, StringComparison.Ordinal)),
                $"container {Container(name)} holds no blob named {prefix}*: [{string.Join(", ", blobs)}]");
        }
    }
}
