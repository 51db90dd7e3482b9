using System.Globalization;

namespace Dse.Samples.TravelReservation;

/// <summary>The launcher's command line: the run's options, or a request for help.</summary>
public sealed class TravelCommandLine
{
    /// <summary>The usage text, printed for <c>--help</c> and after a usage error.</summary>
    public const string Usage = """
        usage: dotnet run -c Release --project samples/TravelReservation -- [options]
          --services LIST       trip sizes to measure: 1..5 (default), one number, or a list such as 1,3,5; a trip
                                of N books the first N of hotel, flight, car, train, insurance
          --rate R              trips per second, open-loop (default 10)
          --duration S          seconds of trips per trip size (default 3)
          --warm-up N           trips booked over every service before measuring (default 80)
          --mode spec|nonspec|both   which clusters to run (default both)
          --chaos               kill -9 a reservation service, then the frontend, at seeded moments of each
                                cluster's load; each is restarted on its port and storage
          --seed N              seed of the trips' items and of the chaos (default random, printed)
          --items K             items per service (default 50; item 0 is the popular one)
          --capacity C          trips per item (default: twice an ordinary item's expected share, so the popular
                                item fills up and the trips that ask for it fail and compensate)
          --group-commit-ms N   group-commit period of every process (default 10)
          --data-dir PATH       keep storage and process logs there (default: a temp folder, deleted)
          --quiet               print only the results
          -h, --help            print this text
        """;

    // Each option's effect, given a function that takes its value from the arguments.
    private static readonly Dictionary<string, Action<TravelCommandLine, Func<string>>> s_options = new(StringComparer.Ordinal)
    {
        ["--services"] = (c, value) => c.Options.Services = ParseServices(value()),
        ["--rate"] = (c, value) => c.Options.Rate = ParseNumber("--rate", value()),
        ["--duration"] = (c, value) => c.Options.Duration = ParseSeconds("--duration", value()),
        ["--warm-up"] = (c, value) => c.Options.WarmUpTrips = ParseInteger("--warm-up", value()),
        ["--mode"] = (c, value) => c.Options.Mode = ParseMode(value()),
        ["--chaos"] = (c, _) => c.Options.Chaos = true,
        ["--seed"] = (c, value) => c.Options.Seed = ParseInteger("--seed", value()),
        ["--items"] = (c, value) => c.Options.Items = ParseInteger("--items", value()),
        ["--capacity"] = (c, value) => c.Options.Capacity = ParseInteger("--capacity", value()),
        ["--group-commit-ms"] = (c, value) => c.Options.GroupCommit = TimeSpan.FromMilliseconds(ParseInteger("--group-commit-ms", value())),
        ["--data-dir"] = (c, value) => c.Options.DataDirectory = Path.GetFullPath(value()),
        ["--quiet"] = (c, _) => c.Quiet = true,
        ["--help"] = (c, _) => c.Help = true,
        ["-h"] = (c, _) => c.Help = true,
    };

    private TravelCommandLine(TravelOptions options)
    {
        Options = options;
    }

    /// <summary>The run's options, validated.</summary>
    public TravelOptions Options { get; }

    /// <summary>Whether to print only the results, without progress lines. Default false.</summary>
    public bool Quiet { get; private set; }

    /// <summary>Whether <c>-h</c> or <c>--help</c> was given: print <see cref="Usage"/> and run nothing.</summary>
    public bool Help { get; private set; }

    /// <summary>Parses the launcher's arguments (those after <c>--</c>) and validates the options.</summary>
    /// <exception cref="ArgumentException">An option is unknown, lacks its value, or has a bad value.</exception>
    public static TravelCommandLine Parse(IReadOnlyList<string> args)
    {
        ArgumentNullException.ThrowIfNull(args);
        var parsed = new TravelCommandLine(new TravelOptions());
        for (int i = 0; i < args.Count; i++)
        {
            string option = args[i];
            var apply = s_options.GetValueOrDefault(option) ?? throw new ArgumentException($"Unknown option '{option}'.");
            apply(parsed, () => i + 1 < args.Count ? args[++i] : throw new ArgumentException($"{option} needs a value."));
        }

        parsed.Options.Validate();
        return parsed;
    }

    /// <summary>
    /// Parses <paramref name="args"/>; returns the command line to run, or <c>null</c> and the exit code when there is
    /// nothing to run: 0 after printing <see cref="Usage"/> to <paramref name="output"/> for <c>--help</c>, 2 after
    /// printing the error and the usage to <paramref name="error"/>.
    /// </summary>
    public static (TravelCommandLine? CommandLine, int ExitCode) ParseOrExplain(IReadOnlyList<string> args, TextWriter output, TextWriter error)
    {
        ArgumentNullException.ThrowIfNull(output);
        ArgumentNullException.ThrowIfNull(error);
        TravelCommandLine parsed;
        try
        {
            parsed = Parse(args);
        }
        catch (ArgumentException ex)
        {
            error.WriteLine($"error: {ex.Message}");
            error.Write(Usage);
            return (null, 2);
        }

        if (parsed.Help)
        {
            output.Write(Usage);
            return (null, 0);
        }

        return (parsed, 0);
    }

    /// <summary>Parses <c>A..B</c>, <c>N</c> or <c>A,B,C</c> into trip sizes, in the order given.</summary>
    /// <exception cref="ArgumentException">The list does not parse.</exception>
    internal static IReadOnlyList<int> ParseServices(string value)
    {
        int range = value.IndexOf("..", StringComparison.Ordinal);
        if (range >= 0)
        {
            int from = ParseInteger("--services", value[..range]);
            int to = ParseInteger("--services", value[(range + 2)..]);
            if (to < from)
            {
                throw new ArgumentException($"--services: the range '{value}' is empty.");
            }

            if (from < 1 || to > TravelServices.Max)
            {
                throw new ArgumentException($"--services: a trip books 1 to {TravelServices.Max} services (got '{value}').");
            }

            return Enumerable.Range(from, to - from + 1).ToArray();
        }

        return value.Split(',').Select(part => ParseInteger("--services", part)).ToArray();
    }

    private static TravelMode ParseMode(string value) => value switch
    {
        "spec" => TravelMode.Speculative,
        "nonspec" => TravelMode.NonSpeculative,
        "both" => TravelMode.Both,
        _ => throw new ArgumentException($"--mode must be spec, nonspec or both (got '{value}')."),
    };

    private static TimeSpan ParseSeconds(string option, string value)
    {
        double seconds = ParseNumber(option, value);
        return seconds is > 0 and <= 3600
            ? TimeSpan.FromSeconds(seconds)
            : throw new ArgumentException($"{option} must be above 0 and at most 3600 seconds (got {value}).");
    }

    private static int ParseInteger(string option, string value) =>
        int.TryParse(value, NumberStyles.Integer, CultureInfo.InvariantCulture, out int n)
            ? n
            : throw new ArgumentException($"{option}: '{value}' is not an integer.");

    private static double ParseNumber(string option, string value) =>
        double.TryParse(value, NumberStyles.Float, CultureInfo.InvariantCulture, out double x) && double.IsFinite(x)
            ? x
            : throw new ArgumentException($"{option}: '{value}' is not a number.");
}
