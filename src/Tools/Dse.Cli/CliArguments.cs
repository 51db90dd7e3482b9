using System.Globalization;

namespace Dse.Cli;

/// <summary>
/// The arguments of one command after its name: positional values, options with a value (<c>--name VALUE</c> or
/// <c>--name=VALUE</c>, each at most once) and flags (<c>--json</c>). Parsed as the coordinator host parses its own
/// command line: anything unknown, repeated or missing is a <see cref="CliUsageException"/> naming it.
/// </summary>
internal sealed class CliArguments
{
    private readonly string _command;
    private readonly Dictionary<string, string> _values;
    private readonly HashSet<string> _flags;

    private CliArguments(string command, List<string> positional, Dictionary<string, string> values, HashSet<string> flags)
    {
        _command = command;
        Positional = positional;
        _values = values;
        _flags = flags;
    }

    /// <summary>The positional values, in order.</summary>
    public IReadOnlyList<string> Positional { get; }

    /// <summary>Whether <c>--json</c> was given.</summary>
    public bool Json => _flags.Contains("--json");

    /// <summary>Parses <paramref name="args"/> for <paramref name="command"/>, which takes the given options and flags.</summary>
    /// <exception cref="CliUsageException">An option is unknown, repeated or has no value, or a positional value is extra or missing.</exception>
    public static CliArguments Parse(string command, IReadOnlyList<string> args, int positionalCount, IReadOnlyCollection<string> options,
        IReadOnlyCollection<string>? flags = null)
    {
        var positional = new List<string>();
        var values = new Dictionary<string, string>(StringComparer.Ordinal);
        var given = new HashSet<string>(StringComparer.Ordinal);
        for (int i = 0; i < args.Count; i++)
        {
            string arg = args[i];
            if (!arg.StartsWith("--", StringComparison.Ordinal))
            {
                if (positional.Count == positionalCount)
                {
                    throw new CliUsageException($"{command}: unexpected argument {Shown(arg)}.");
                }

                positional.Add(arg);
                continue;
            }

            int equals = arg.IndexOf('=', StringComparison.Ordinal);
            string name = equals > 0 ? arg[..equals] : arg;
            if (name == "--json" || (flags?.Contains(name) ?? false))
            {
                if (equals > 0)
                {
                    throw new CliUsageException($"{command}: {name} takes no value.");
                }

                if (!given.Add(name))
                {
                    throw new CliUsageException($"{command}: {name} is given twice.");
                }

                continue;
            }

            if (!options.Contains(name))
            {
                throw new CliUsageException($"{command}: unknown option {Shown(name)}.");
            }

            string value;
            if (equals > 0)
            {
                value = arg[(equals + 1)..];
            }
            else if (i + 1 < args.Count)
            {
                value = args[++i];
            }
            else
            {
                throw new CliUsageException($"{command}: {name} needs a value.");
            }

            if (!values.TryAdd(name, value))
            {
                throw new CliUsageException($"{command}: {name} is given twice.");
            }
        }

        if (positional.Count < positionalCount)
        {
            throw new CliUsageException($"{command}: missing argument (see dse {command} --help).");
        }

        return new CliArguments(command, positional, values, given);
    }

    /// <summary>Whether the flag <paramref name="name"/> was given.</summary>
    public bool Has(string name) => _flags.Contains(name);

    /// <summary>The value of an option, or <see langword="null"/> when it was not given.</summary>
    public string? Optional(string name) => _values.GetValueOrDefault(name);

    /// <summary>The value of an option that must be given.</summary>
    /// <exception cref="CliUsageException">It was not given.</exception>
    public string Required(string name) =>
        _values.TryGetValue(name, out string? value) ? value : throw new CliUsageException($"{_command}: {name} is required.");

    /// <summary>A whole number of 0 or more.</summary>
    /// <exception cref="CliUsageException">The value is not one.</exception>
    public long NonNegative(string name, string value) =>
        long.TryParse(value, NumberStyles.None, CultureInfo.InvariantCulture, out long result)
            ? result
            : throw new CliUsageException($"{_command}: {name} must be a whole number of 0 or more (got {Shown(value)}).");

    /// <summary>A size in bytes that is a power of two, as a number or with KB, MB or GB (1024-based); <paramref name="fallback"/> when absent.</summary>
    /// <exception cref="CliUsageException">The value is not such a size.</exception>
    public long PowerOfTwoSize(string name, long fallback, long minimum)
    {
        string? value = Optional(name);
        if (value is null)
        {
            return fallback;
        }

        (string number, long unit) = value switch
        {
            _ when value.EndsWith("KB", StringComparison.OrdinalIgnoreCase) => (value[..^2], 1L << 10),
            _ when value.EndsWith("MB", StringComparison.OrdinalIgnoreCase) => (value[..^2], 1L << 20),
            _ when value.EndsWith("GB", StringComparison.OrdinalIgnoreCase) => (value[..^2], 1L << 30),
            _ => (value, 1L),
        };
        if (long.TryParse(number, NumberStyles.None, CultureInfo.InvariantCulture, out long amount) && amount <= (1L << 40) / unit
            && long.IsPow2(amount * unit) && amount * unit >= minimum)
        {
            return amount * unit;
        }

        throw new CliUsageException($"{_command}: {name} must be a power of two of at least {minimum} bytes, such as 1MB or 64MB (got {Shown(value)}).");
    }

    /// <summary>
    /// An argument as an error message may show it: quoted, unless it could be a secret (anything with '=' or ';', as
    /// the coordinator host treats a connection string passed by mistake).
    /// </summary>
    public static string Shown(string argument) =>
        argument.AsSpan().IndexOfAny('=', ';') >= 0 ? "(not shown: it may contain a secret)" : $"'{argument}'";
}
