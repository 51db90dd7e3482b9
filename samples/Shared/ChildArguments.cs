using System.Globalization;

namespace Dse.Samples.Shared;

/// <summary>The <c>--name value</c> pairs the launcher gives a child process.</summary>
internal sealed class ChildArguments
{
    private readonly Dictionary<string, string> _values = new(StringComparer.Ordinal);

    private ChildArguments()
    {
    }

    /// <summary>Parses <c>--name value</c> pairs.</summary>
    /// <exception cref="ArgumentException">An argument is not a <c>--name value</c> pair.</exception>
    public static ChildArguments Parse(IReadOnlyList<string> args)
    {
        var parsed = new ChildArguments();
        for (int i = 0; i < args.Count; i += 2)
        {
            if (!args[i].StartsWith("--", StringComparison.Ordinal) || i + 1 >= args.Count)
            {
                throw new ArgumentException($"Expected '--name value' pairs; '{args[i]}' has no value or is not an option.");
            }

            parsed._values[args[i][2..]] = args[i + 1];
        }

        return parsed;
    }

    /// <summary>The value of <c>--<paramref name="name"/></c>.</summary>
    /// <exception cref="ArgumentException">It is missing.</exception>
    public string Get(string name) => _values.TryGetValue(name, out var value) ? value : throw new ArgumentException($"Missing --{name}.");

    /// <summary>The value of <c>--<paramref name="name"/></c>, or <c>null</c> when it was not given.</summary>
    public string? GetOptional(string name) => _values.GetValueOrDefault(name);

    /// <summary>The value of <c>--<paramref name="name"/></c> as an integer.</summary>
    public long GetInt64(string name) => long.Parse(Get(name), CultureInfo.InvariantCulture);

    /// <summary>The value of <c>--<paramref name="name"/></c> as a boolean.</summary>
    public bool GetBoolean(string name) => bool.Parse(Get(name));
}
