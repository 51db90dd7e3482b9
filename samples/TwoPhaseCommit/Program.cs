using System.Globalization;
using System.Runtime.InteropServices;
using Dse.Samples.TwoPhaseCommit;
using Microsoft.AspNetCore.Builder;
using Microsoft.Extensions.Hosting;

// The libDSE paper's two-phase commit experiment: a commit coordinator and four participants, each an ASP.NET gRPC
// process writing to its own speculative log, driven by closed-loop clients; speculative vs non-speculative commit
// latency. The same executable is the launcher and, with a mode as first argument, each process of the cluster.
const string Usage = """
    usage: dotnet run -c Release --project samples/TwoPhaseCommit -- [options]
      --transactions N      transactions per mode (default 30000)
      --clients N           closed-loop clients (default 8)
      --group-commit-ms N   group-commit period of every log (default 10)
      --mode spec|nonspec|both   which runs (default both)
      --chaos               kill -9 a participant mid-run (speculative run) and restart it; check atomicity
      --seed N              seed of the chaos (default random, printed)
      --data-dir PATH       keep storage and process logs there (default: a temp folder, deleted)
      --json PATH           write the results and every commit latency sample as JSON (charts/ reads it)
      --quiet               print only the results
    """;

if (args.Length > 0 && args[0] is CoordinatorHost.Mode or ServerHost.Participant or ServerHost.Committer)
{
    return await RunChildAsync(args[0], args[1..]);
}

var options = new TwoPhaseCommitOptions();
string? jsonPath = null;
bool quiet = false;
try
{
    for (int i = 0; i < args.Length; i++)
    {
        string Value() => i + 1 < args.Length ? args[++i] : throw new ArgumentException($"{args[i]} needs a value.");
        int Int(string value) => int.TryParse(value, NumberStyles.Integer, CultureInfo.InvariantCulture, out int n) ? n : throw new ArgumentException($"'{value}' is not an integer.");
        switch (args[i])
        {
            case "--transactions":
                options.Transactions = Int(Value());
                break;
            case "--clients":
                options.Clients = Int(Value());
                break;
            case "--group-commit-ms":
                options.GroupCommit = TimeSpan.FromMilliseconds(Int(Value()));
                break;
            case "--mode":
                options.Mode = Value() switch
                {
                    "spec" => TwoPhaseCommitMode.Speculative,
                    "nonspec" => TwoPhaseCommitMode.NonSpeculative,
                    "both" => TwoPhaseCommitMode.Both,
                    var other => throw new ArgumentException($"--mode must be spec, nonspec or both (got '{other}')."),
                };
                break;
            case "--chaos":
                options.Chaos = true;
                break;
            case "--seed":
                options.Seed = Int(Value());
                break;
            case "--data-dir":
                options.DataDirectory = Path.GetFullPath(Value());
                break;
            case "--json":
                jsonPath = Path.GetFullPath(Value());
                break;
            case "--quiet":
                quiet = true;
                break;
            case "-h" or "--help":
                Console.Write(Usage);
                return 0;
            default:
                throw new ArgumentException($"Unknown option '{args[i]}'.");
        }
    }

    options.Validate();
}
catch (ArgumentException ex)
{
    Console.Error.WriteLine($"error: {ex.Message}");
    Console.Error.Write(Usage);
    return 2;
}

using var cts = new CancellationTokenSource();
Console.CancelKeyPress += (_, e) =>
{
    // Stop the run; disposing the cluster kills every child process and the temp folder is deleted.
    e.Cancel = true;
    cts.Cancel();
};
using var onTerminate = PosixSignalRegistration.Create(PosixSignal.SIGTERM, context =>
{
    // The same for SIGTERM (a supervisor, `kill`): without this the runtime would exit at once, leaving the temp folder.
    context.Cancel = true;
    cts.Cancel();
});

var startedUtc = DateTime.UtcNow;
Console.WriteLine($"2PC sample: {options.Transactions} transactions per mode from {options.Clients} closed-loop clients; committer + 4 participants, each an ASP.NET gRPC process with its own speculative log; group commit {options.GroupCommit.TotalMilliseconds} ms{(options.Chaos ? "; chaos on" : string.Empty)}");
TwoPhaseCommitResults results;
try
{
    results = await TwoPhaseCommitRun.RunAsync(options, quiet ? null : Console.Out, cts.Token);
}
catch (Exception) when (cts.IsCancellationRequested)
{
    // Cancellation surfaces as OperationCanceledException, or as a call that failed CANCELLED.
    Console.Error.WriteLine("cancelled; the cluster's processes were stopped.");
    return 130;
}
catch (InvalidOperationException ex)
{
    Console.Error.WriteLine($"error: {ex.Message}");
    return 1;
}

foreach (var mode in new[] { results.Speculative, results.NonSpeculative })
{
    if (mode is null)
    {
        continue;
    }

    string name = mode.Speculative ? "speculative    " : "non-speculative";
    Console.WriteLine(string.Create(CultureInfo.InvariantCulture,
        $"{name}: commit latency mean {mode.MeanMs:F2} ms, p50 {mode.P50Ms:F2} ms, p99 {mode.P99Ms:F2} ms; committed {mode.Committed}, aborted {mode.Aborted}, failed {mode.Failed} in {mode.Elapsed.TotalSeconds:F1} s ({mode.Committed / mode.Elapsed.TotalSeconds:F0} commits/s)"));
    Console.WriteLine(string.Create(CultureInfo.InvariantCulture,
        $"{new string(' ', name.Length)}  atomicity: {mode.CheckedTransactions} transactions checked at 4 participants; kills {mode.Kills}, committed after the restart {(mode.Kills > 0 ? mode.CommittedAfterRestart.ToString(CultureInfo.InvariantCulture) : "-")}, violations {mode.Violations.Count}"));
    if (mode.NotCommittedReasons.Count > 0)
    {
        Console.WriteLine($"{new string(' ', name.Length)}  not committed: {string.Join(", ", mode.NotCommittedReasons.OrderByDescending(r => r.Value).Select(r => $"{r.Key} x{r.Value}"))}");
    }

    foreach (string violation in mode.Violations)
    {
        Console.WriteLine($"  VIOLATION: {violation}");
    }
}

if (double.IsFinite(results.Ratio))
{
    Console.WriteLine(string.Create(CultureInfo.InvariantCulture,
        $"speculative / non-speculative mean commit latency: {results.Ratio:F2} (saves {results.NonSpeculative!.MeanMs - results.Speculative!.MeanMs:F2} ms per transaction)"));
}

if (options.Chaos)
{
    Console.WriteLine($"chaos seed {results.Seed} (replay with --chaos --seed {results.Seed})");
}

if (jsonPath is not null)
{
    ResultsJson.Write(jsonPath, results, startedUtc);
    Console.WriteLine($"wrote {jsonPath}");
}

if (!results.Passed)
{
    Console.Error.WriteLine("error: the atomicity checks failed (see VIOLATION lines).");
    return 1;
}

return 0;

// One process of the cluster: announce the address once serving, then run until standard input closes (the launcher
// exited or was killed) or the host is stopped (Ctrl+C, SIGTERM).
static async Task<int> RunChildAsync(string mode, string[] args)
{
    ChildArguments parsed;
    try
    {
        parsed = ChildArguments.Parse(args);
    }
    catch (ArgumentException ex)
    {
        Console.Error.WriteLine($"error: {ex.Message}");
        return 2;
    }

    var (app, address) = mode == CoordinatorHost.Mode
        ? await CoordinatorHost.StartAsync(parsed, CancellationToken.None)
        : await ServerHost.StartAsync(mode, parsed, CancellationToken.None);
    await using (app)
    {
        Console.WriteLine(ChildProcess.Announcement + address.ToString().TrimEnd('/'));
        await Console.Out.FlushAsync();
        var launcherGone = Task.Run(async () =>
        {
            while (await Console.In.ReadLineAsync() is not null)
            {
            }
        });
        await Task.WhenAny(launcherGone, app.WaitForShutdownAsync());
        await app.StopAsync();
    }

    return 0;
}
