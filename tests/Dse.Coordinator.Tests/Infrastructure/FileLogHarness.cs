using Dse.Testing;
namespace Dse.Coordinator.Tests.Infrastructure;

/// <summary>File logs at one path in a fresh temp directory, deleted on dispose.</summary>
public sealed class FileLogHarness : LogHarness
{
    public FileLogHarness()
    {
        Directory = System.IO.Directory.CreateTempSubdirectory("dse-coordinator-tests-").FullName;
        Path = System.IO.Path.Combine(Directory, "logs", "coordinator.log");
    }

    public string Directory { get; }

    public string Path { get; }

    public override FencingMode Fencing => FencingMode.HolderKeepsLog;

    public override ICoordinatorLog CreateLog() => new FileCoordinatorLog(Path);

    public FileCoordinatorLog CreateLog(ListLogger logger) => new(Path, logger);

    public override ValueTask DisposeAsync()
    {
        try
        {
            System.IO.Directory.Delete(Directory, recursive: true);
        }
        catch (DirectoryNotFoundException)
        {
        }

        return ValueTask.CompletedTask;
    }
}
