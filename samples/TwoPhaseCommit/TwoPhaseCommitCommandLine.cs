using System.Globalization;

namespace Dse.Samples.TwoPhaseCommit;

/// <summary>The launcher's command line: the run's options and how to report it.</summary>
public sealed class TwoPhaseCommitCommandLine
{
    /// <summary>The usage text, printed for <c>--help</c> and after a usage error.</summary>
    public const string Usage = """
        usage: dotnet run -c Release --project samples/TwoPhaseCommit -- [options]
          --transactions N      transactions per mode (default 2000: both modes in about a minute on 2 cores)
          --full                the libDSE paper's run, as the benchmark runs it: 30000 transactions per mode,
                                profile-guided JIT (several minutes per mode)
          --warm-up N           transactions per mode before measuring (default: a fifth of them, 10 to 200)
          --clients N           closed-loop clients (default 8)
          --group-commit-ms N   group-commit period of every log (default 10)
          --mode spec|nonspec|both   which runs (default both)
          --chaos               kill -9 a participant mid-run (speculative run) and restart it; check atomicity
          --seed N              seed of the chaos (default random, printed)
          --forge               mid-run, send each participant a Begin with each kind of forged DSE header; the
                                implausible ones must be refused (INVALID_ARGUMENT) and the run must still pass
          --tls                 serve every process over TLS with a throwaway CA made in the run's folder
          --data-dir PATH       keep storage and process logs there (default: a temp folder, deleted)
          --json PATH           write the results and every commit latency sample as JSON (charts/ reads it)
          --quiet               print only the results
        """;

    private TwoPhaseCommitCommandLine(TwoPhaseCommitOptions options)
    {
        Options = options;
    }

    /// <summary>The run's options, validated.</summary>
    public TwoPhaseCommitOptions Options { get; }

    /// <summary>Where to write the results as JSON (a full path); null (default) writes none.</summary>
    public string? JsonPath { get; private set; }

    /// <summary>Whether to print only the results, without progress lines. Default false.</summary>
    public bool Quiet { get; private set; }

    /// <summary>Whether <c>-h</c> or <c>--help</c> was given: print <see cref="Usage"/> and run nothing.</summary>
    public bool Help { get; private set; }

    /// <summary>Parses the launcher's arguments (those after <c>--</c>) and validates the options.</summary>
    /// <exception cref="ArgumentException">An option is unknown, lacks its value, has a bad value, or conflicts with another.</exception>
    public static TwoPhaseCommitCommandLine Parse(IReadOnlyList<string> args)
    {
        ArgumentNullException.ThrowIfNull(args);
        var parsed = new TwoPhaseCommitCommandLine(new TwoPhaseCommitOptions());
        var options = parsed.Options;
        string? transactionsFrom = null;
        for (int i = 0; i < args.Count; i++)
        {
            string option = args[i];
            string Value() => i + 1 < args.Count ? args[++i] : throw new ArgumentException($"{option} needs a value.");
            int Int() => Value() is var value && int.TryParse(value, NumberStyles.Integer, CultureInfo.InvariantCulture, out int n)
                ? n
                : throw new ArgumentException($"{option}: '{args[i]}' is not an integer.");
            switch (option)
            {
                case "--transactions" or "--full":
                    if (transactionsFrom is not null)
                    {
                        throw new ArgumentException($"{option} and {transactionsFrom} both set the transactions per mode; give one of them.");
                    }

                    transactionsFrom = option;
                    if (option == "--full")
                    {
                        // The paper's run as the benchmark runs it: steady state, with profile-guided JIT.
                        options.Transactions = TwoPhaseCommitOptions.PaperTransactions;
                        options.TieredPgo = true;
                    }
                    else
                    {
                        options.Transactions = Int();
                    }

                    break;
                case "--warm-up":
                    options.WarmUpTransactions = Int();
                    break;
                case "--clients":
                    options.Clients = Int();
                    break;
                case "--group-commit-ms":
                    options.GroupCommit = TimeSpan.FromMilliseconds(Int());
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
                case "--tls":
                    options.Tls = true;
                    break;
                case "--forge":
                    options.Forge = true;
                    break;
                case "--seed":
                    options.Seed = Int();
                    break;
                case "--data-dir":
                    options.DataDirectory = Path.GetFullPath(Value());
                    break;
                case "--json":
                    parsed.JsonPath = Path.GetFullPath(Value());
                    break;
                case "--quiet":
                    parsed.Quiet = true;
                    break;
                case "-h" or "--help":
                    parsed.Help = true;
                    break;
                default:
                    throw new ArgumentException($"Unknown option '{option}'.");
            }
        }

        options.Validate();
        return parsed;
    }
}
