using System.Globalization;
using Dse.Darq;
using Dse.Samples.SearchTrend;

// The DARQ paper's search-trend example: filter -> count -> alert, three DARQs with co-located processors on local
// files. Runs it with each DARQ speculation mode (or one, with --mode), checks that the alerts equal those computed
// straight from the input, and prints how long each window takes to come out the other end.
var options = new SearchTrendOptions();
DarqSpeculationMode[] modes = [DarqSpeculationMode.Off, DarqSpeculationMode.IntraParticipant, DarqSpeculationMode.General];
for (int i = 0; i < args.Length; i++)
{
    switch (args[i])
    {
        case "--mode" when i + 1 < args.Length:
            DarqSpeculationMode? mode = args[++i] switch
            {
                "off" => DarqSpeculationMode.Off,
                "local" => DarqSpeculationMode.IntraParticipant,
                "general" => DarqSpeculationMode.General,
                _ => null,
            };
            if (mode is null)
            {
                return Usage($"Unknown mode '{args[i]}': off, local or general.");
            }

            modes = [mode.Value];
            break;
        case "--windows" when i + 1 < args.Length && int.TryParse(args[i + 1], CultureInfo.InvariantCulture, out int windows) && windows > 0:
            options.Windows = windows;
            i++;
            break;
        case "--window-size" when i + 1 < args.Length && int.TryParse(args[i + 1], CultureInfo.InvariantCulture, out int size) && size > 0:
            options.WindowSize = size;
            i++;
            break;
        case "--commit-ms" when i + 1 < args.Length && double.TryParse(args[i + 1], CultureInfo.InvariantCulture, out double ms) && ms > 0:
            options.CommitInterval = TimeSpan.FromMilliseconds(ms);
            i++;
            break;
        case "--seed" when i + 1 < args.Length && int.TryParse(args[i + 1], CultureInfo.InvariantCulture, out int seed):
            options.Seed = seed;
            i++;
            break;
        case "--chaos":
            options.Chaos = true;
            break;
        case "--data-dir" when i + 1 < args.Length:
            options.DataDirectory = args[++i];
            break;
        case "-h" or "--help":
            WriteUsage(Console.Out);
            return 0;
        default:
            return Usage($"Unknown or incomplete option '{args[i]}'.");
    }
}

var input = SearchInput.Windows(options.Seed, options.Windows, options.WindowSize);
var expected = SearchInput.Expected(input, options.Threshold);
Console.WriteLine(string.Create(CultureInfo.InvariantCulture,
    $"Search trend: {options.Windows} windows of {options.WindowSize} search events, filter -> count -> alert, group commit {options.CommitInterval.TotalMilliseconds} ms{(options.Chaos ? ", with chaos" : "")}"));
Console.WriteLine($"Expected: {expected.Windows.Count} window summaries, {expected.Alerts.Count} alerts (first: {expected.Alerts.FirstOrDefault() ?? "none"})");
int status = 0;
foreach (var mode in modes)
{
    options.Speculation = mode;
    await using var pipeline = await SearchTrendPipeline.StartAsync(options);
    var latencies = await pipeline.RunAsync(input);
    foreach (var chaos in pipeline.Events)
    {
        Console.WriteLine($"  {Name(mode)}: {chaos}");
    }

    bool same = pipeline.Result.SameAs(expected);
    Array.Sort(latencies);
    Console.WriteLine(string.Create(CultureInfo.InvariantCulture,
        $"{Name(mode),-8} window latency p50 {Percentile(latencies, 0.5),6:F1} ms, p99 {Percentile(latencies, 0.99),6:F1} ms; " +
        $"{pipeline.Result.Alerts.Count} alerts, {(same ? "equal to the expected result" : "DIFFERENT from the expected result")}; " +
        $"processors registered: {string.Join(", ", pipeline.Registrations.Select(r => $"{r.Key} {r.Value}"))}" +
        $"{(options.Chaos ? $"; search events sent again: {pipeline.Resent}" : "")}"));
    if (!same)
    {
        status = 1;
    }
}

return status;

static string Name(DarqSpeculationMode mode) => mode switch
{
    DarqSpeculationMode.Off => "off",
    DarqSpeculationMode.IntraParticipant => "local",
    _ => "general",
};

static double Percentile(double[] sorted, double p) => sorted.Length == 0 ? 0 : sorted[Math.Clamp((int)Math.Ceiling(p * sorted.Length) - 1, 0, sorted.Length - 1)];

static int Usage(string problem)
{
    Console.Error.WriteLine($"error: {problem}");
    WriteUsage(Console.Error);
    return 2;
}

static void WriteUsage(TextWriter writer) => writer.Write("""
    usage: dotnet run -c Release --project samples/SearchTrend -- [options]
      --mode off|local|general   run one speculation mode (default: all three, a few seconds each)
      --windows N        windows of search events (default 40; more for a longer run)
      --window-size N    search events per window (default 100)
      --commit-ms MS     each DARQ's group commit, and under general speculation its version period (default 10)
      --seed S           seed of the search events (default 7)
      --chaos            kill a processor, crash the filter DARQ and restart the alert DARQ mid-run
      --data-dir PATH    keep the DARQs' files there (default: a temp folder, deleted)
    """);
