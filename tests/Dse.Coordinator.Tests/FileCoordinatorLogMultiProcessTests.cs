using System.Diagnostics;
using Dse.Coordinator.Tests.Infrastructure;

namespace Dse.Coordinator.Tests;

/// <summary>
/// The file log's fencing across OS processes: the child is this test assembly run with <c>dotnet exec</c> (Program.cs),
/// so both sides use the real <see cref="FileCoordinatorLog"/>. The tests wait on the child's output, never on time.
/// </summary>
[Trait("Category", "MultiProcess")]
public sealed class FileCoordinatorLogMultiProcessTests : IAsyncLifetime
{
    private readonly FileLogHarness _harness = new();

    public Task InitializeAsync() => Task.CompletedTask;

    public async Task DisposeAsync() => await _harness.DisposeAsync();

    [Fact]
    public async Task OpenAsync_WhileAnotherProcessHoldsTheLog_ThrowsFencedUntilThatProcessIsKilled()
    {
        await using var child = ChildLogProcess.Start(null, "hold", _harness.Path, "from the child");
        Assert.Equal("HELD 0", await child.ReadLineAsync());

        await using (var contender = new FileCoordinatorLog(_harness.Path))
        {
            var error = await Assert.ThrowsAsync<CoordinatorLogFencedException>(() => contender.OpenAsync());
            Assert.Contains("held by another coordinator", error.Message, StringComparison.Ordinal);
        }

        // kill -9: the child never disposes the log; the kernel drops its lock with its file descriptors.
        await child.KillHardAsync();

        await using var restarted = new FileCoordinatorLog(_harness.Path);
        Assert.Equal(["from the child"], Frames.Texts(await restarted.OpenAsync()));
        await restarted.AppendAsync(Frames.Bytes("from the restarted coordinator"));
        Assert.Equal(1, restarted.DurableAppends);
    }

    [Fact]
    public async Task OpenAsync_InAnotherProcessWhileHeldHere_ChildIsFenced()
    {
        await using (var holder = new FileCoordinatorLog(_harness.Path))
        {
            await holder.OpenAsync();
            await holder.AppendAsync(Frames.Bytes("held here"));

            await using var child = ChildLogProcess.Start(null, "try-open", _harness.Path);
            string line = await child.ReadLineAsync();
            Assert.Equal(Program.ExitFenced, await child.WaitForExitAsync());
            Assert.StartsWith("FENCED ", line, StringComparison.Ordinal);
            Assert.Contains("held by another coordinator", line, StringComparison.Ordinal);
        }

        await using var afterRelease = ChildLogProcess.Start(null, "try-open", _harness.Path);
        Assert.Equal("OPENED 1", await afterRelease.ReadLineAsync());
        Assert.Equal(Program.ExitOpened, await afterRelease.WaitForExitAsync());
    }

    [Fact]
    public async Task OpenAsync_FileLockingDisabledInTheProcess_RefusesToOpen()
    {
        if (OperatingSystem.IsWindows())
        {
            // The switch only exists on Unix; Windows always enforces share modes. Nothing to check here.
            return;
        }

        var environment = new Dictionary<string, string> { ["DOTNET_SYSTEM_IO_DISABLEFILELOCKING"] = "1" };
        await using var child = ChildLogProcess.Start(environment, "try-open", _harness.Path);

        string line = await child.ReadLineAsync();
        Assert.Equal(Program.ExitRefused, await child.WaitForExitAsync());
        Assert.Contains("file locking is disabled", line, StringComparison.Ordinal);
    }

    [Fact]
    public async Task OpenAsync_Held_FlockUtilityCannotLockTheFileEither()
    {
        if (!OperatingSystem.IsLinux() || !File.Exists("/usr/bin/flock"))
        {
            // util-linux flock(1) is what this checks against; other systems are covered by the .NET child tests.
            return;
        }

        await using (var holder = new FileCoordinatorLog(_harness.Path))
        {
            await holder.OpenAsync();
            Assert.Equal(1, await RunFlockAsync());
        }

        Assert.Equal(0, await RunFlockAsync());
    }

    /// <summary>Exit code of <c>flock -n PATH true</c>: 0 when it took the exclusive lock, 1 when the file was locked.</summary>
    private async Task<int> RunFlockAsync()
    {
        var start = new ProcessStartInfo("/usr/bin/flock") { UseShellExecute = false };
        foreach (string argument in new[] { "-n", "-E", "1", _harness.Path, "true" })
        {
            start.ArgumentList.Add(argument);
        }

        using var flock = Process.Start(start) ?? throw new InvalidOperationException("Could not start flock.");
        using var timeout = new CancellationTokenSource(TimeSpan.FromSeconds(30));
        await flock.WaitForExitAsync(timeout.Token);
        return flock.ExitCode;
    }
}
