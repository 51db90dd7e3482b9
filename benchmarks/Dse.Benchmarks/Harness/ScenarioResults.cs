using System.Globalization;
using System.Text.RegularExpressions;

namespace Dse.Benchmarks.Harness;

/// <summary>The ordered key/values a scenario reports; each value carries the precision it is printed with.</summary>
public sealed partial class ScenarioResults
{
    private readonly List<Entry> _entries = [];
    private readonly List<KeyValuePair<string, IReadOnlyList<double>>> _samples = [];

    /// <summary>The entries in the order they were added.</summary>
    public IReadOnlyList<Entry> Entries => _entries;

    /// <summary>Named series of raw measurements (for distributions in the charts), in the order they were added.</summary>
    public IReadOnlyList<KeyValuePair<string, IReadOnlyList<double>>> Samples => _samples;

    /// <summary>Adds a measured value printed with <paramref name="decimals"/> decimals.</summary>
    /// <exception cref="ArgumentException">The key is not snake_case, is already present, or the value is not finite.</exception>
    public ScenarioResults Add(string key, double value, int decimals)
    {
        ArgumentOutOfRangeException.ThrowIfNegative(decimals);
        ArgumentOutOfRangeException.ThrowIfGreaterThan(decimals, 9);
        if (!double.IsFinite(value))
        {
            throw new ArgumentException($"Result '{key}' is not a finite number ({value}).", nameof(value));
        }

        if (!KeyPattern().IsMatch(key))
        {
            throw new ArgumentException($"Result key '{key}' must be snake_case: lowercase letters, digits and underscores.", nameof(key));
        }

        foreach (var e in _entries)
        {
            if (e.Key == key)
            {
                throw new ArgumentException($"Result key '{key}' was already added.", nameof(key));
            }
        }

        _entries.Add(new Entry(key, Math.Round(value, decimals, MidpointRounding.AwayFromZero), decimals));
        return this;
    }

    /// <summary>
    /// Adds a series of raw measurements, written under <c>samples</c> in the JSON (not on the RESULT line), for
    /// example one latency per transaction.
    /// </summary>
    /// <exception cref="ArgumentException">The key is not snake_case or is already present, or a value is not finite.</exception>
    public ScenarioResults AddSamples(string key, IReadOnlyList<double> values)
    {
        ArgumentNullException.ThrowIfNull(values);
        if (!KeyPattern().IsMatch(key))
        {
            throw new ArgumentException($"Samples key '{key}' must be snake_case: lowercase letters, digits and underscores.", nameof(key));
        }

        foreach (var s in _samples)
        {
            if (s.Key == key)
            {
                throw new ArgumentException($"Samples key '{key}' was already added.", nameof(key));
            }
        }

        foreach (double v in values)
        {
            if (!double.IsFinite(v))
            {
                throw new ArgumentException($"Samples '{key}' hold a value that is not a finite number ({v}).", nameof(values));
            }
        }

        _samples.Add(new(key, values));
        return this;
    }

    /// <summary>Adds a count.</summary>
    public ScenarioResults Add(string key, long value) => Add(key, value, 0);

    [GeneratedRegex("^[a-z][a-z0-9_]*$")]
    private static partial Regex KeyPattern();

    /// <summary>One key/value, already rounded to its precision.</summary>
    public readonly record struct Entry(string Key, double Value, int Decimals)
    {
        /// <summary>The value as printed: invariant culture, fixed decimals.</summary>
        public string FormattedValue => Value.ToString("F" + Decimals.ToString(CultureInfo.InvariantCulture), CultureInfo.InvariantCulture);
    }
}
