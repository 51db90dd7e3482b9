using System.Text;
using Dse.Coordinator;

namespace Dse.Coordinator.Tests;

/// <summary>
/// Entry point for the multi-process tests, which run this assembly with <c>dotnet exec</c> to use a
/// <see cref="FileCoordinatorLog"/> from another OS process. The test host never calls it.
/// </summary>
/// <remarks>
/// <c>hold PATH RECORD</c>: opens the log, appends RECORD, prints <c>HELD n</c> (n records recovered), then holds the
/// log until standard input closes (or the process is killed). <c>try-open PATH</c>: prints <c>OPENED n</c> and exits
/// with <see cref="ExitOpened"/>, or prints <c>FENCED message</c> / <c>REFUSED message</c> and exits with
/// <see cref="ExitFenced"/> / <see cref="ExitRefused"/>.
/// </remarks>
internal static class Program
{
    public const int ExitOpened = 0;
    public const int ExitUsage = 2;
    public const int ExitFenced = 3;
    public const int ExitRefused = 4;

    public static async Task<int> Main(string[] args)
    {
        if (args.Length >= 3 && args[0] == "hold")
        {
            await using var log = new FileCoordinatorLog(args[1]);
            var recovered = await log.OpenAsync();
            await log.AppendAsync(Encoding.UTF8.GetBytes(args[2]));
            await Console.Out.WriteLineAsync($"HELD {recovered.Count}");
            await Console.Out.FlushAsync();
            await Console.In.ReadToEndAsync();
            return ExitOpened;
        }

        if (args.Length >= 2 && args[0] == "try-open")
        {
            try
            {
                await using var log = new FileCoordinatorLog(args[1]);
                var recovered = await log.OpenAsync();
                await Console.Out.WriteLineAsync($"OPENED {recovered.Count}");
                return ExitOpened;
            }
            catch (CoordinatorLogFencedException ex)
            {
                await Console.Out.WriteLineAsync($"FENCED {ex.Message}");
                return ExitFenced;
            }
            catch (InvalidOperationException ex)
            {
                await Console.Out.WriteLineAsync($"REFUSED {ex.Message}");
                return ExitRefused;
            }
        }

        await Console.Error.WriteLineAsync("usage: hold PATH RECORD | try-open PATH");
        return ExitUsage;
    }
}
