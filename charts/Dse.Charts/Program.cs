using Dse.Charts;

// dotnet Dse.Charts.dll [results-dir] [out-dir]: charts from the benchmark harness JSON.
if (args.Length > 2 || args is ["-h" or "--help", ..])
{
    Console.Error.WriteLine("usage: Dse.Charts [results-dir (default benchmarks/results)] [out-dir (default charts)]");
    return args.Length > 2 ? 2 : 0;
}

var resultsDir = args.Length > 0 ? args[0] : Path.Combine("benchmarks", "results");
var outDir = args.Length > 1 ? args[1] : "charts";
return ChartRunner.Run(resultsDir, outDir, Console.Out, Console.Error);
