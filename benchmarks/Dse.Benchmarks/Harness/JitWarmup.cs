using System.Runtime;

namespace Dse.Benchmarks.Harness;

/// <summary>
/// Warm-up that lasts until the JIT has finished with the code under test, rather than for a fixed number of rounds.
/// </summary>
/// <remarks>
/// With tiered compilation and dynamic PGO a method runs as tier-0 code, then as instrumented code, and only then as
/// optimized tier-1 code; each promotion waits for call counts and for a quiet spell with no new tier-0 compilation,
/// and is compiled on a background thread. A loop of many small methods (a DARQ step goes through a dozen) therefore
/// reaches its steady-state code much later than a loop of a few (a raw FasterLog scan and append), and can run at
/// several times its final cost for its first second or more on two cores: a fixed warm-up can leave one side of a
/// comparison warm and the other still tiering. Here warm-up rounds repeat until a round compiles no more than a
/// handful of methods, that is until tiering has settled for every loop the round runs.
/// </remarks>
public static class JitWarmup
{
    /// <summary>A warm-up round that compiles at most this many methods counts as quiet: tiering has settled.</summary>
    public const int QuietMethods = 3;

    /// <summary>Methods the JIT has compiled so far in this process, on every thread (tier promotions included).</summary>
    public static long CompiledMethods => JitInfo.GetCompiledMethodCount(currentThread: false);

    /// <summary>
    /// Runs <paramref name="round"/> at least <paramref name="minRounds"/> times, then until a round compiles at most
    /// <see cref="QuietMethods"/> methods, or <paramref name="maxRounds"/> rounds have run.
    /// </summary>
    /// <param name="name">The scenario's name, for the log.</param>
    /// <param name="round">One discarded round of every timed loop.</param>
    /// <param name="minRounds">The fewest rounds.</param>
    /// <param name="maxRounds">The most rounds; reaching it without a quiet round is logged as a warning.</param>
    /// <param name="log">Where each round's count goes.</param>
    /// <returns>How many rounds ran, and whether the last one was quiet.</returns>
    public static async Task<(int Rounds, bool Quiet)> RunAsync(string name, Func<Task> round, int minRounds, int maxRounds, TextWriter log)
    {
        ArgumentNullException.ThrowIfNull(round);
        ArgumentNullException.ThrowIfNull(log);
        ArgumentOutOfRangeException.ThrowIfLessThan(minRounds, 1);
        ArgumentOutOfRangeException.ThrowIfLessThan(maxRounds, minRounds);
        for (int done = 1; ; done++)
        {
            long before = CompiledMethods;
            await round();
            long compiled = CompiledMethods - before;
            log.WriteLine($"{name} warm-up round {done}: the JIT compiled {compiled} methods");
            bool quiet = compiled <= QuietMethods;
            if ((done >= minRounds && quiet) || done == maxRounds)
            {
                if (!quiet)
                {
                    log.WriteLine($"{name}: warning: the JIT still compiled {compiled} methods in the last of {maxRounds} warm-up rounds; " +
                        "the first measured rounds may run on code that is still tiering");
                }

                return (done, quiet);
            }
        }
    }
}
