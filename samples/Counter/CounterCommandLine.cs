using System.Globalization;

namespace Dse.Samples.Counter;

/// <summary>The Counter sample's command line: how many requests, and the app's options.</summary>
public sealed class CounterCommandLine
{
    /// <summary>Requests per mode by default: both modes end within seconds.</summary>
    public const int DefaultRequests = 200;

    /// <summary>The usage text, printed for <c>--help</c> and after a usage error.</summary>
    public const string Usage = """
        usage: dotnet run -c Release --project samples/Counter -- [options]
          --requests N      sequential requests per mode (default 200: both modes in about 15 s; more for a longer run)
          --latency-ms L    latency added to every storage write, standing in for cloud storage (default 5)
          --period-ms P     group-commit period of every service (default 10)
          --data-dir PATH   keep storage in local files there (default: in memory)
        """;

    private CounterCommandLine(CounterAppOptions options)
    {
        Options = options;
    }

    /// <summary>Sequential requests per mode. Default <see cref="DefaultRequests"/>.</summary>
    public int Requests { get; private set; } = DefaultRequests;

    /// <summary>The app's options; <see cref="CounterAppOptions.Speculative"/> is set per mode by the run.</summary>
    public CounterAppOptions Options { get; }

    /// <summary>Whether <c>-h</c> or <c>--help</c> was given: print <see cref="Usage"/> and run nothing.</summary>
    public bool Help { get; private set; }

    /// <summary>Parses the sample's arguments (those after <c>--</c>).</summary>
    /// <exception cref="ArgumentException">An option is unknown, lacks its value or has a bad value.</exception>
    public static CounterCommandLine Parse(IReadOnlyList<string> args)
    {
        ArgumentNullException.ThrowIfNull(args);
        var parsed = new CounterCommandLine(new CounterAppOptions());
        for (int i = 0; i < args.Count; i++)
        {
            string option = args[i];
            string Value() => i + 1 < args.Count ? args[++i] : throw new ArgumentException($"{option} needs a value.");
            double Milliseconds()
            {
                string value = Value();
                return double.TryParse(value, NumberStyles.Float, CultureInfo.InvariantCulture, out double ms) && ms >= 0 && double.IsFinite(ms)
                    ? ms
                    : throw new ArgumentException($"{option}: '{value}' is not a number of milliseconds.");
            }

            switch (option)
            {
                case "--requests":
                    string requests = Value();
                    parsed.Requests = int.TryParse(requests, NumberStyles.Integer, CultureInfo.InvariantCulture, out int n) && n > 0
                        ? n
                        : throw new ArgumentException($"--requests must be a positive integer (got '{requests}').");
                    break;
                case "--latency-ms":
                    parsed.Options.WriteLatency = TimeSpan.FromMilliseconds(Milliseconds());
                    break;
                case "--period-ms":
                    double period = Milliseconds();
                    parsed.Options.GroupCommitPeriod = period > 0 ? TimeSpan.FromMilliseconds(period) : throw new ArgumentException("--period-ms must be positive.");
                    break;
                case "--data-dir":
                    parsed.Options.DataDirectory = Value();
                    break;
                case "-h" or "--help":
                    parsed.Help = true;
                    break;
                default:
                    throw new ArgumentException($"Unknown option '{option}'.");
            }
        }

        return parsed;
    }
}
