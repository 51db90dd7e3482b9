using System.Globalization;

namespace Dse.Benchmarks.Harness;

/// <summary>
/// The process's minor page faults so far (<c>/proc/self/stat</c>): each is a first touch of memory the kernel then zeroes,
/// microseconds each on a virtual machine, so a timed phase that allocates fresh memory (a log's new pages, a growing
/// array) pays for it where a phase that reuses memory does not. 0 where <c>/proc/self/stat</c> is missing.
/// </summary>
public static class PageFaults
{
    /// <summary>The minor faults of the whole process so far.</summary>
    public static long Minor()
    {
        try
        {
            string stat = File.ReadAllText("/proc/self/stat");
            // The command name (field 2) is in parentheses and may hold spaces: count fields after its closing one.
            var fields = stat[(stat.LastIndexOf(')') + 2)..].Split(' ');
            return fields.Length > 7 ? long.Parse(fields[7], CultureInfo.InvariantCulture) : 0;
        }
        catch (Exception e) when (e is IOException or UnauthorizedAccessException or FormatException or OverflowException)
        {
            return 0;
        }
    }
}
