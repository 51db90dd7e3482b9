using System.Diagnostics;
using BenchmarkDotNet.Running;
using Dse.Benchmarks.Harness;

namespace Dse.Benchmarks;

/// <summary>
/// Entry point: <c>SCENARIO [--quick] [--results-dir PATH]</c> runs one end-to-end scenario, <c>list</c> lists them,
/// <c>bdn ARGS</c> runs the BenchmarkDotNet microbenchmarks. Only the RESULT line goes to stdout; progress goes to stderr.
/// A scenario that fails ends with a <c>status=failed</c> RESULT line, a one-line reason on stderr and exit code 1.
/// </summary>
internal static class Program
{
    private const int Failed = 1;
    private const int UsageError = 2;
    private const int Cancelled = 130;

    private static async Task<int> Main(string[] args)
    {
        if (args.Length == 0 || args[0] is "-h" or "--help" or "help")
        {
            PrintUsage(args.Length == 0 ? Console.Error : Console.Out);
            return args.Length == 0 ? UsageError : 0;
        }

        if (args[0] == "list")
        {
            Console.WriteLine("# scenario       what it measures (--quick runs it in seconds as a smoke test: not a measurement)");
            foreach (var s in ScenarioRegistry.All)
            {
                Console.WriteLine($"{s.Name,-16} {s.Description}");
            }

            return 0;
        }

        if (args[0] == "bdn")
        {
            var summaries = BenchmarkSwitcher.FromAssembly(typeof(Program).Assembly).Run(args[1..]);
            foreach (var summary in summaries)
            {
                if (summary.HasCriticalValidationErrors)
                {
                    return 1;
                }
            }

            return 0;
        }

        if (args[0] == Scenarios.CommitPoolScenario.ChildCommand)
        {
            // One phase of commit-pool, in a process of its own (started by that scenario).
            return await Scenarios.CommitPoolScenario.RunChildAsync(args[1..]).ConfigureAwait(false);
        }

        var scenario = ScenarioRegistry.Find(args[0]);
        if (scenario is null)
        {
            Console.Error.WriteLine($"error: unknown scenario '{args[0]}'. Known scenarios: {string.Join(", ", Names())}. Run with 'list' for descriptions.");
            return UsageError;
        }

        bool quick = false;
        string? resultsDir = null;
        for (int i = 1; i < args.Length; i++)
        {
            if (args[i] == "--quick")
            {
                quick = true;
            }
            else if (args[i] == "--results-dir" && i + 1 < args.Length)
            {
                resultsDir = args[++i];
            }
            else
            {
                Console.Error.WriteLine($"error: unknown option '{args[i]}' for scenario '{scenario.Name}'; the options are --quick and --results-dir PATH.");
                return UsageError;
            }
        }

        return await RunScenarioAsync(scenario, quick, resultsDir).ConfigureAwait(false);
    }

    /// <summary>The configuration key, as an environment variable, that turns the project's telemetry on or off.</summary>
    private const string TelemetryVariable = "Dse__Telemetry__Enabled";

    private static async Task<int> RunScenarioAsync(IScenario scenario, bool quick, string? resultsDir)
    {
        // The processes a scenario starts (2pc, travel) inherit this environment: they measure the protocol without an
        // OpenTelemetry listener unless the caller set the variable (docs/benchmarks.md, "Running the harness").
        if (Environment.GetEnvironmentVariable(TelemetryVariable) is null)
        {
            Environment.SetEnvironmentVariable(TelemetryVariable, "false");
        }

#if DEBUG
        Console.Error.WriteLine("warning: this is a Debug build; run with -c Release for meaningful numbers.");
#endif

        // An exception on a thread nobody awaits would end the process with a crash dump: report it as this scenario's
        // failure instead, and exit before the runtime prints anything else.
        AppDomain.CurrentDomain.UnhandledException += (_, e) =>
        {
            ReportFailure(scenario.Name, e.ExceptionObject as Exception ?? new InvalidOperationException($"non-exception thrown: {e.ExceptionObject}"));
            Environment.Exit(Failed);
        };

        // Scenario workers may block pool threads briefly (start barriers); keep the runtime's own timers and
        // continuations from waiting for thread injection behind them.
        ThreadPool.GetMinThreads(out int workers, out int io);
        ThreadPool.SetMinThreads(Math.Max(workers, Environment.ProcessorCount + 4), io);

        using var cts = new CancellationTokenSource();
        Console.CancelKeyPress += (_, e) =>
        {
            e.Cancel = true;
            cts.Cancel();
        };

        var startedUtc = DateTime.UtcNow;
        long started = Stopwatch.GetTimestamp();
        try
        {
            string folder = ResultWriter.ResultsFolder(resultsDir);
            var results = await scenario.RunAsync(new ScenarioContext(quick, Console.Error, cts.Token)).ConfigureAwait(false);
            var elapsed = Stopwatch.GetElapsedTime(started);
            string path = ResultWriter.WriteJson(folder, scenario.Name, quick, startedUtc, elapsed, results);
            Console.Error.WriteLine($"{scenario.Name}: {elapsed.TotalSeconds:F1} s, wrote {path}");
            if (quick)
            {
                Console.Error.WriteLine($"{scenario.Name}: {ResultWriter.QuickNote}.");
            }

            Console.WriteLine(ResultWriter.FormatLine(scenario.Name, results));
            return 0;
        }
        catch (OperationCanceledException) when (cts.IsCancellationRequested)
        {
            Console.Error.WriteLine($"{scenario.Name}: cancelled.");
            Console.WriteLine(ResultWriter.FormatFailureLine(scenario.Name, "cancelled", "cancelled by Ctrl+C"));
            return Cancelled;
        }
        catch (Exception e)
        {
            ReportFailure(scenario.Name, e);
            return Failed;
        }
    }

    /// <summary>The failed RESULT line on stdout and the same reason, on one line, on stderr.</summary>
    private static void ReportFailure(string scenario, Exception exception)
    {
        string reason = FailureReason.Describe(exception);
        Console.Error.WriteLine($"{scenario}: failed: {reason}");
        Console.WriteLine(ResultWriter.FormatFailureLine(scenario, "failed", reason));
        Console.Out.Flush();
        Console.Error.Flush();
    }

    private static List<string> Names()
    {
        var names = new List<string>(ScenarioRegistry.All.Count);
        foreach (var s in ScenarioRegistry.All)
        {
            names.Add(s.Name);
        }

        return names;
    }

    private static void PrintUsage(TextWriter to)
    {
        to.WriteLine("usage: dotnet run -c Release --project benchmarks/Dse.Benchmarks -- <scenario> [--quick] [--results-dir PATH]");
        to.WriteLine("       dotnet run -c Release --project benchmarks/Dse.Benchmarks -- list");
        to.WriteLine("       dotnet run -c Release --project benchmarks/Dse.Benchmarks -- bdn [BenchmarkDotNet args, e.g. --filter '*' --job short]");
        to.WriteLine("  --quick             a smoke run of a few seconds: shows the scenario works; its numbers are not measurements");
        to.WriteLine($"  --results-dir PATH  where <scenario>.json goes (default: ${ResultWriter.ResultsFolderVariable}, else benchmarks/results)");
        to.WriteLine("exit codes: 0 done, 1 the scenario failed (RESULT <scenario> status=failed error=\"...\"), 2 usage, 130 cancelled");
        to.WriteLine($"scenarios: {string.Join(", ", Names())}");
    }
}
