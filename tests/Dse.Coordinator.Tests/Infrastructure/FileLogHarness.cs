using Dse.Testing;
using Microsoft.Extensions.Logging;

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

    public FileCoordinatorLog CreateLog(LogCapture logs) => new(Path, logs.CreateLogger<FileCoordinatorLog>());

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
