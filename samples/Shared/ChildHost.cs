using Microsoft.AspNetCore.Builder;
using Microsoft.Extensions.Hosting;

namespace Dse.Samples.Shared;

/// <summary>
/// Runs one process of a sample's cluster (the program started with a mode as its first argument, <see cref="ChildProcess"/>):
/// starts its host, announces the address once serving, then runs until standard input closes (the launcher exited or
/// was killed) or the host is stopped (Ctrl+C, SIGTERM).
/// </summary>
internal static class ChildHost
{
    /// <summary>
    /// Parses <paramref name="args"/> (the <c>--name value</c> pairs after the mode) and runs the host
    /// <paramref name="start"/> builds and starts, announcing it on <paramref name="output"/> and running until
    /// <paramref name="input"/> closes; returns the process's exit code (2 for bad arguments, said on <paramref name="error"/>).
    /// </summary>
    public static async Task<int> RunAsync(
        IReadOnlyList<string> args,
        Func<ChildArguments, CancellationToken, Task<(WebApplication App, Uri Address)>> start,
        TextReader input,
        TextWriter output,
        TextWriter error)
    {
        ArgumentNullException.ThrowIfNull(start);
        ArgumentNullException.ThrowIfNull(input);
        ArgumentNullException.ThrowIfNull(output);
        ArgumentNullException.ThrowIfNull(error);
        ChildArguments parsed;
        try
        {
            parsed = ChildArguments.Parse(args);
        }
        catch (ArgumentException ex)
        {
            await error.WriteLineAsync($"error: {ex.Message}");
            return 2;
        }

        var (app, address) = await start(parsed, CancellationToken.None);
        await using (app)
        {
            await output.WriteLineAsync(ChildProcess.Announcement + address.ToString().TrimEnd('/'));
            await output.FlushAsync();

            // Also where a user looks for it (the launcher keeps standard error in logs/): the port serves /metrics too.
            await error.WriteLineAsync(ChildProcess.Announcement + address.ToString().TrimEnd('/'));
            var launcherGone = Task.Run(async () =>
            {
                while (await input.ReadLineAsync() is not null)
                {
                }
            });
            await Task.WhenAny(launcherGone, app.WaitForShutdownAsync());
            await app.StopAsync();
        }

        return 0;
    }
}
