using System.Diagnostics;
using BenchmarkDotNet.Running;
using Dse.Benchmarks.Harness;

namespace Dse.Benchmarks;

/// <summary>
/// Entry point: <c>SCENARIO [--quick]</c> runs one end-to-end scenario, <c>list</c> lists them, <c>bdn ARGS</c> runs the
/// BenchmarkDotNet microbenchmarks. Only the RESULT line goes to stdout; progress goes to stderr.
/// </summary>
internal static class Program
{
    private const int UsageError = 2;

    private static async Task<int> Main(string[] args)
    {
        if (args.Length == 0 || args[0] is "-h" or "--help" or "help")
        {
            PrintUsage(args.Length == 0 ? Console.Error : Console.Out);
            return args.Length == 0 ? UsageError : 0;
        }

        if (args[0] == "list")
        {
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
        foreach (var option in args[1..])
        {
            if (option == "--quick")
            {
                quick = true;
            }
            else
            {
                Console.Error.WriteLine($"error: unknown option '{option}' for scenario '{scenario.Name}'; the only option is --quick.");
                return UsageError;
            }
        }

        return await RunScenarioAsync(scenario, quick).ConfigureAwait(false);
    }

    private static async Task<int> RunScenarioAsync(IScenario scenario, bool quick)
    {
#if DEBUG
        Console.Error.WriteLine("warning: this is a Debug build; run with -c Release for meaningful numbers.");
#endif

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
        ScenarioResults results;
        try
        {
            results = await scenario.RunAsync(new ScenarioContext(quick, Console.Error, cts.Token)).ConfigureAwait(false);
        }
        catch (OperationCanceledException) when (cts.IsCancellationRequested)
        {
            Console.Error.WriteLine($"{scenario.Name}: cancelled.");
            return 130;
        }

        var elapsed = Stopwatch.GetElapsedTime(started);
        string path = ResultWriter.WriteJson(scenario.Name, quick, startedUtc, elapsed, results);
        Console.Error.WriteLine($"{scenario.Name}: {elapsed.TotalSeconds:F1} s, wrote {path}");
        Console.WriteLine(ResultWriter.FormatLine(scenario.Name, results));
        return 0;
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
        to.WriteLine("usage: dotnet run -c Release --project benchmarks/Dse.Benchmarks -- <scenario> [--quick]");
        to.WriteLine("       dotnet run -c Release --project benchmarks/Dse.Benchmarks -- list");
        to.WriteLine("       dotnet run -c Release --project benchmarks/Dse.Benchmarks -- bdn [BenchmarkDotNet args, e.g. --filter '*' --job short]");
        to.WriteLine($"scenarios: {string.Join(", ", Names())}");
    }
}
