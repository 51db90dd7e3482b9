using Dse.Samples.Shared;
using Dse.Samples.TwoPhaseCommit;

// The libDSE paper's two-phase commit experiment: a commit coordinator and four participants, each an ASP.NET gRPC
// process writing to its own speculative log, driven by closed-loop clients; speculative vs non-speculative commit
// latency. The same executable is the launcher and, with a mode as first argument, each process of the cluster.
if (args.Length > 0 && args[0] is CoordinatorHost.Mode or ServerHost.Participant or ServerHost.Committer)
{
    string mode = args[0];
    return await ChildHost.RunAsync(
        args[1..],
        (parsed, ct) => mode == CoordinatorHost.Mode ? CoordinatorHost.StartAsync(parsed, ct) : ServerHost.StartAsync(mode, parsed, ct),
        Console.In,
        Console.Out,
        Console.Error);
}

TwoPhaseCommitCommandLine commandLine;
try
{
    commandLine = TwoPhaseCommitCommandLine.Parse(args);
}
catch (ArgumentException ex)
{
    Console.Error.WriteLine($"error: {ex.Message}");
    Console.Error.Write(TwoPhaseCommitCommandLine.Usage);
    return 2;
}

if (commandLine.Help)
{
    Console.Write(TwoPhaseCommitCommandLine.Usage);
    return 0;
}

var options = commandLine.Options;
using var interruption = new Interruption();
var startedUtc = DateTime.UtcNow;
Console.WriteLine($"2PC sample: {options.Transactions} transactions per mode{(options.Transactions < TwoPhaseCommitOptions.PaperTransactions ? " (--full: the paper's 30000)" : string.Empty)} from {options.Clients} closed-loop clients; committer + 4 participants, each an ASP.NET gRPC process with its own speculative log; group commit {options.GroupCommit.TotalMilliseconds} ms{(options.Chaos ? "; chaos on" : string.Empty)}");

// Each mode's results are printed as soon as it has ended and been checked, before the next mode starts.
var (run, exitCode) = await interruption.RunAsync(
    ct => TwoPhaseCommitRun.RunAsync(options, commandLine.Quiet ? null : Console.Out, mode => TwoPhaseCommitReport.WriteMode(Console.Out, mode), ct),
    Console.Error);
if (run is not { } results)
{
    return exitCode;
}

TwoPhaseCommitReport.WriteComparison(Console.Out, results);
if (options.Chaos)
{
    // The seed draws the victim and the moment as a share of the transactions: a replay needs the same count.
    Console.WriteLine($"chaos seed {results.Seed} (replay with --chaos --seed {results.Seed}{(options.Transactions == new TwoPhaseCommitOptions().Transactions ? string.Empty : $" --transactions {options.Transactions}")})");
}

if (commandLine.JsonPath is { } jsonPath)
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
