using System.Diagnostics;
using System.Globalization;
using Dse.Samples.Counter;

// The libDSE paper's running example: a client increments a counter through a frontend, which logs each result.
// Runs it speculatively and as the non-speculative baseline, and prints end-to-end latency of both.
CounterCommandLine commandLine;
try
{
    commandLine = CounterCommandLine.Parse(args);
}
catch (ArgumentException ex)
{
    Console.Error.WriteLine($"error: {ex.Message}");
    Console.Error.Write(CounterCommandLine.Usage);
    return 2;
}

if (commandLine.Help)
{
    Console.Write(CounterCommandLine.Usage);
    return 0;
}

int requests = commandLine.Requests;
var options = commandLine.Options;
Console.WriteLine($"Counter sample: {requests} sequential requests per mode, frontend -> counter -> logging, storage write latency {options.WriteLatency.TotalMilliseconds} ms, group commit {options.GroupCommitPeriod.TotalMilliseconds} ms");
var results = new Dictionary<bool, double[]>();
foreach (bool speculative in new[] { true, false })
{
    options.Speculative = speculative;
    if (options.DataDirectory is not null)
    {
        // Each mode starts from empty storage.
        Directory.CreateDirectory(options.DataDirectory);
        foreach (var file in Directory.GetFiles(options.DataDirectory, "*.log*"))
        {
            File.Delete(file);
        }
    }

    await using var app = await CounterApp.StartAsync(options);
    await app.Frontend.HandleAsync(-1);   // warm-up, not measured
    var latencies = new double[requests];
    for (int i = 0; i < requests; i++)
    {
        long start = Stopwatch.GetTimestamp();
        await app.Frontend.HandleAsync(i);
        latencies[i] = Stopwatch.GetElapsedTime(start).TotalMilliseconds;
    }

    // What the clients were told is what the services hold.
    if (app.Counter.Value != requests + 1 || app.Logging.Entries.Count != requests + 1 || app.Frontend.Completed != requests + 1)
    {
        Console.Error.WriteLine($"Inconsistent state: counter {app.Counter.Value}, log entries {app.Logging.Entries.Count}, completed {app.Frontend.Completed}, expected {requests + 1}.");
        return 1;
    }

    results[speculative] = latencies;
    Array.Sort(latencies);
    Console.WriteLine(string.Create(CultureInfo.InvariantCulture,
        $"{(speculative ? "speculative    " : "non-speculative")}: mean {latencies.Average():F2} ms, p50 {Percentile(latencies, 0.50):F2} ms, p99 {Percentile(latencies, 0.99):F2} ms"));
}

double ratio = results[true].Average() / results[false].Average();
Console.WriteLine(string.Create(CultureInfo.InvariantCulture, $"speculative / non-speculative mean latency: {ratio:F2}"));
return 0;

static double Percentile(double[] sorted, double p) => sorted[Math.Clamp((int)Math.Ceiling(p * sorted.Length) - 1, 0, sorted.Length - 1)];
