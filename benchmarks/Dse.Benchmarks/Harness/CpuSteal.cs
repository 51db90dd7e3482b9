using System.Globalization;

namespace Dse.Benchmarks.Harness;

/// <summary>
/// The share of CPU time the hypervisor gave to others ("steal", from <c>/proc/stat</c>) over a stretch of time: on a
/// shared virtual machine a timed phase that ran while the host took the cores away is slow for reasons no code of ours
/// explains, and this says which phases those were. 0 where <c>/proc/stat</c> is missing or has no steal field.
/// </summary>
public readonly record struct CpuSteal(long Steal, long Total)
{
    /// <summary>The machine's CPU counters now (all cores, in clock ticks).</summary>
    public static CpuSteal Now()
    {
        try
        {
            using var reader = new StreamReader("/proc/stat");
            var fields = (reader.ReadLine() ?? string.Empty).Split(' ', StringSplitOptions.RemoveEmptyEntries);
            if (fields.Length < 9 || fields[0] != "cpu")
            {
                return default;
            }

            long total = 0;
            for (int i = 1; i < fields.Length; i++)
            {
                total += long.Parse(fields[i], CultureInfo.InvariantCulture);
            }

            return new CpuSteal(long.Parse(fields[8], CultureInfo.InvariantCulture), total);
        }
        catch (Exception e) when (e is IOException or UnauthorizedAccessException or FormatException or OverflowException)
        {
            return default;
        }
    }

    /// <summary>The steal share between <paramref name="start"/> and this reading, 0 to 1.</summary>
    public double ShareSince(CpuSteal start) => Total > start.Total ? (double)(Steal - start.Steal) / (Total - start.Total) : 0;
}
