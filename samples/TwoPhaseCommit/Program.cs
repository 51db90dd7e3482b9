using System.Runtime.InteropServices;
using Dse.Samples.TwoPhaseCommit;
using Microsoft.AspNetCore.Builder;
using Microsoft.Extensions.Hosting;

// The libDSE paper's two-phase commit experiment: a commit coordinator and four participants, each an ASP.NET gRPC
// process writing to its own speculative log, driven by closed-loop clients; speculative vs non-speculative commit
// latency. The same executable is the launcher and, with a mode as first argument, each process of the cluster.
if (args.Length > 0 && args[0] is CoordinatorHost.Mode or ServerHost.Participant or ServerHost.Committer)
{
    return await RunChildAsync(args[0], args[1..]);
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
Console.WriteLine($"2PC sample: {options.Transactions} transactions per mode{(options.Transactions < TwoPhaseCommitOptions.PaperTransactions ? " (--full: the paper's 30000)" : string.Empty)} from {options.Clients} closed-loop clients; committer + 4 participants, each an ASP.NET gRPC process with its own speculative log; group commit {options.GroupCommit.TotalMilliseconds} ms{(options.Chaos ? "; chaos on" : string.Empty)}");
TwoPhaseCommitResults results;
try
{
    // Each mode's results are printed as soon as it has ended and been checked, before the next mode starts.
    results = await TwoPhaseCommitRun.RunAsync(options, commandLine.Quiet ? null : Console.Out, mode => TwoPhaseCommitReport.WriteMode(Console.Out, mode), cts.Token);
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
