using System.Globalization;
using Dse.Samples.Shared;
using Dse.Samples.TravelReservation;

// libDSE's travel reservation experiment (Fig. 9): a frontend whose workflow engine books a trip as a saga over up to
// five reservation services, each an ASP.NET gRPC process on its own speculative key-value store; trip latency
// speculative vs not, for trips of 1 to 5 services, and a consistency check of every store. The same executable is the
// launcher and, with a mode as first argument, each process of the cluster.
if (args.Length > 0 && args[0] is CoordinatorHost.Mode or ReservationHost.Mode or FrontendHost.Mode)
{
    string mode = args[0];
    return await ChildHost.RunAsync(
        args[1..],
        (parsed, ct) => mode switch
        {
            CoordinatorHost.Mode => CoordinatorHost.StartAsync(parsed, ct),
            ReservationHost.Mode => ReservationHost.StartAsync(parsed, ct),
            _ => FrontendHost.StartAsync(parsed, ct),
        },
        Console.In,
        Console.Out,
        Console.Error);
}

var (commandLine, exitCode) = TravelCommandLine.ParseOrExplain(args, Console.Out, Console.Error);
if (commandLine is null)
{
    return exitCode;
}

var options = commandLine.Options;
using var interruption = new Interruption();
Console.WriteLine(string.Create(CultureInfo.InvariantCulture,
    $"travel reservation sample: trips of {string.Join(", ", options.Services)} services, {options.TripsPerConfiguration} each at {options.Rate} trips/s; {options.Items} items of capacity {options.EffectiveCapacity} per service; group commit {options.GroupCommit.TotalMilliseconds} ms{(options.Chaos ? "; chaos on" : string.Empty)}"));

// Each configuration's line comes as it ends, each cluster's check as it is done; the table at the end.
(var results, exitCode) = await interruption.RunAsync(
    ct => TravelRun.RunAsync(
        options,
        commandLine.Quiet ? null : Console.Out,
        configuration => TravelReport.WriteConfiguration(Console.Out, configuration),
        mode => TravelReport.WriteCheck(Console.Out, mode),
        ct),
    Console.Error);
if (results is null)
{
    return exitCode;
}

TravelReport.WriteTable(Console.Out, results);
Console.WriteLine($"seed {results.Seed} (replay with --seed {results.Seed})");
TravelChecker.Write(Console.Out, results.Violations);
return results.Passed ? 0 : 1;
