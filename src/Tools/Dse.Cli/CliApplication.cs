using System.Text.Json;

namespace Dse.Cli;

/// <summary>
/// The <c>dse</c> tool: finds the command, runs it, and prints its result as text or, with <c>--json</c>, as one JSON
/// document. Every error is one line on standard error and a non-zero exit code.
/// </summary>
internal static class CliApplication
{
    public const int ExitOk = 0;
    public const int ExitFailed = 1;
    public const int ExitUsage = 2;

    public const string Usage = """
        Usage: dse COMMAND [options]

        Commands:
          status --coordinator URL        The cluster view of a running coordinator host.
          remove --coordinator URL --id N Remove a participant that is gone for good.
          darq inspect PATH               A DARQ's log over local files: entries, LSNs, unconsumed messages, producers.
          log inspect PATH                A coordinator journal or a SnapshotLog: records and a summary.
          header decode BASE64            A DSE header's fields.

        Every command takes --json (one JSON document on standard output) and -h/--help. Reading commands never
        change the files they read. Exit codes: 0 done, 1 failed (the reason is one line on standard error),
        2 invalid arguments. docs/cli.md describes every command.
        """;

    private static readonly JsonSerializerOptions Indented = new() { WriteIndented = true };

    public static async Task<int> RunAsync(string[] args, TextWriter output, TextWriter error, CancellationToken cancellationToken)
    {
        if (args is [] or ["-h" or "--help" or "help"])
        {
            await output.WriteAsync(Usage);
            return args.Length == 0 ? ExitUsage : ExitOk;
        }

        var (usage, run) = Find(args, out int consumed);
        if (run is null)
        {
            await error.WriteLineAsync($"error: unknown command {CliArguments.Shown(string.Join(' ', args.Take(Math.Max(consumed, 1))))}; run dse --help for the list.");
            return ExitUsage;
        }

        var rest = args[consumed..];
        if (rest.Contains("-h") || rest.Contains("--help"))
        {
            await output.WriteAsync(usage);
            return ExitOk;
        }

        try
        {
            var result = await run(rest, cancellationToken);
            if (rest.Contains("--json"))
            {
                await output.WriteLineAsync(result.Json.ToJsonString(Indented));
            }
            else
            {
                foreach (string line in result.Text)
                {
                    await output.WriteLineAsync(line);
                }
            }

            return ExitOk;
        }
        catch (CliUsageException e)
        {
            await error.WriteLineAsync($"error: {e.Message}");
            return ExitUsage;
        }
        catch (CliFailureException e)
        {
            await error.WriteLineAsync($"error: {e.Message}");
            return ExitFailed;
        }
        catch (OperationCanceledException) when (cancellationToken.IsCancellationRequested)
        {
            await error.WriteLineAsync("error: cancelled.");
            return ExitFailed;
        }
    }

    private static (string Usage, Func<IReadOnlyList<string>, CancellationToken, Task<CommandResult>>? Run) Find(string[] args, out int consumed)
    {
        consumed = 1;
        switch (args[0])
        {
            case "status":
                return (StatusCommand.Usage, StatusCommand.RunAsync);
            case "remove":
                return (RemoveCommand.Usage, RemoveCommand.RunAsync);
        }

        consumed = 2;
        return (args[0], args.Length > 1 ? args[1] : null) switch
        {
            ("darq", "inspect") => (DarqInspectCommand.Usage, DarqInspectCommand.RunAsync),
            ("log", "inspect") => (LogInspectCommand.Usage, (a, _) => Task.FromResult(LogInspectCommand.Run(a))),
            ("header", "decode") => (HeaderDecodeCommand.Usage, (a, _) => Task.FromResult(HeaderDecodeCommand.Run(a))),
            _ => (string.Empty, null),
        };
    }
}
