using System.Globalization;
using Dse.Testing;

namespace Dse.Hosting.Tests;

/// <summary>
/// A hosted two-service app (tests/Dse.Hosting.TestHost: two StateObjects registered with <c>AddDse</c>, the default
/// in-process coordinator) killed with SIGKILL mid-traffic and restarted on the same storage, again and again.
/// </summary>
public sealed class HostedCrashRecoveryTests
{
    private const string Project = "tests/Dse.Hosting.TestHost";
    private const string Assembly = "Dse.Hosting.TestHost.dll";
    private const int Restarts = 20;
    private const int SigKillExitCode = 128 + 9;

    // A barrier that can never pass fails the child's call with the reason (Dse:BarrierTimeout) well before the run's
    // own bound; both are generous for a run of about a second on a loaded machine, so only a hang reaches them.
    private const string BarrierTimeoutMs = "15000";
    private static readonly TimeSpan RunTimeout = TimeSpan.FromSeconds(60);

    /// <summary>
    /// Back's storage holds each write back 30 ms, so every kill loses Back's newest versions while Front keeps its own,
    /// which depend on them (Front counts an addition only after Back did). Each restart must come up within the run's
    /// bound and serve plain calls (no barrier that can never pass), restore a consistent pair (Front's total never above
    /// Back's), and keep every reply that passed its barrier (Front's total at least the highest one acknowledged).
    /// </summary>
    [Fact]
    [Trait("Category", "MultiProcess")]
    [Trait("Category", "Recovery")]
    public async Task KillNineMidTraffic_RestartOnSameStorage_RestoresConsistentStateAndServes()
    {
        const int seed = 28;
        var random = new Random(seed);
        string directory = Path.Combine(Path.GetTempPath(), $"dse-hosting-crash-{Guid.NewGuid():N}");
        string replay = $"seed {seed}; replay: dotnet test tests/Dse.Hosting.Tests --filter {nameof(KillNineMidTraffic_RestartOnSameStorage_RestoresConsistentStateAndServes)}";
        long acknowledged = 0;
        try
        {
            for (int run = 1; run <= Restarts + 1; run++)
            {
                bool last = run > Restarts;
                int killAfter = last ? 0 : random.Next(5, 40);
                var result = await BuiltProgram.RunAsync(Project, Assembly,
                    ["--dir", directory, "--kill-after", killAfter.ToString(CultureInfo.InvariantCulture), "--back-write-latency-ms", "30", "--barrier-timeout-ms", BarrierTimeoutMs],
                    RunTimeout);
                string context = $"run {run} of {Restarts + 1} (kill after {killAfter} replies; {replay}):\n{result.Describe()}";

                Assert.False(result.TimedOut, $"The run hung. {context}");
                Assert.True(result.ExitCode == (last ? 0 : SigKillExitCode), $"Unexpected exit. {context}");
                var (front, back) = Recovered(result, context);
                Assert.True(front <= back, $"Inconsistent restore: Front's total {front} counts additions Back lost (Back's total {back}). {context}");
                Assert.True(front >= acknowledged, $"Lost a reply that passed its barrier: Front restored {front}, a reply acknowledged {acknowledged}. {context}");

                var replies = Replies(result);
                Assert.True(replies.Count >= Math.Max(killAfter, 1), $"Expected at least {Math.Max(killAfter, 1)} replies. {context}");
                acknowledged = Math.Max(acknowledged, replies.Max());
            }
        }
        finally
        {
            if (Directory.Exists(directory))
            {
                Directory.Delete(directory, recursive: true);
            }
        }
    }

    private static (long Front, long Back) Recovered(ProgramRun result, string context)
    {
        string line = result.OutputLines.FirstOrDefault(l => l.StartsWith("RECOVERED ", StringComparison.Ordinal))
            ?? throw new Xunit.Sdk.XunitException($"No RECOVERED line. {context}");
        string[] parts = line.Split(' ');
        return (long.Parse(parts[1], CultureInfo.InvariantCulture), long.Parse(parts[2], CultureInfo.InvariantCulture));
    }

    private static List<long> Replies(ProgramRun result) =>
        [.. result.OutputLines.Where(l => l.StartsWith("ACK ", StringComparison.Ordinal)).Select(l => long.Parse(l[4..], CultureInfo.InvariantCulture))];
}
