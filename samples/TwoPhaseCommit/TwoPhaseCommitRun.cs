using System.Diagnostics;
using System.Globalization;
using Dse.Samples.Shared;
using Dse.Samples.TwoPhaseCommit.Wire;

namespace Dse.Samples.TwoPhaseCommit;

/// <summary>
/// The 2PC experiment of the libDSE paper (section 6): a whole cluster as local processes, closed-loop clients, run
/// speculatively and then, on a fresh cluster, non-speculatively; commit latency of both, and atomicity checked on
/// what the participants' logs hold at the end. Optionally a participant is killed and restarted mid-run.
/// </summary>
public static class TwoPhaseCommitRun
{
    private static readonly TimeSpan QuiesceTimeout = TimeSpan.FromSeconds(120);

    /// <summary>Runs the experiment; <paramref name="progress"/> (optional) receives one line per step.</summary>
    /// <exception cref="ArgumentException">An option is invalid.</exception>
    /// <exception cref="InvalidOperationException">A process of the cluster failed; the message carries its standard error.</exception>
    public static Task<TwoPhaseCommitResults> RunAsync(TwoPhaseCommitOptions options, TextWriter? progress = null, CancellationToken cancellationToken = default) =>
        RunAsync(options, progress, modeFinished: null, cancellationToken);

    /// <summary>
    /// Runs the experiment; <paramref name="progress"/> (optional) receives one line per step, and
    /// <paramref name="modeFinished"/> (optional) each mode's results as soon as that mode has ended and been checked,
    /// before the next mode starts.
    /// </summary>
    /// <exception cref="ArgumentException">An option is invalid.</exception>
    /// <exception cref="InvalidOperationException">A process of the cluster failed; the message carries its standard error.</exception>
    public static async Task<TwoPhaseCommitResults> RunAsync(TwoPhaseCommitOptions options, TextWriter? progress, Action<ModeResults>? modeFinished, CancellationToken cancellationToken = default)
    {
        ArgumentNullException.ThrowIfNull(options);
        options.Validate();
        int seed = options.Seed ?? Random.Shared.Next();
        string root = RunDirectory.Create(options.DataDirectory, "dse-2pc-");
        try
        {
            ModeResults? speculative = null;
            ModeResults? nonSpeculative = null;
            if (options.Mode != TwoPhaseCommitMode.NonSpeculative)
            {
                speculative = await RunModeAsync(options, true, options.Chaos, seed, root, progress, cancellationToken).ConfigureAwait(false);
                modeFinished?.Invoke(speculative);
            }

            if (options.Mode != TwoPhaseCommitMode.Speculative)
            {
                bool chaos = options.Chaos && options.Mode == TwoPhaseCommitMode.NonSpeculative;
                nonSpeculative = await RunModeAsync(options, false, chaos, seed, root, progress, cancellationToken).ConfigureAwait(false);
                modeFinished?.Invoke(nonSpeculative);
            }

            return new TwoPhaseCommitResults { Options = options, Seed = seed, Speculative = speculative, NonSpeculative = nonSpeculative };
        }
        finally
        {
            if (options.DataDirectory is null)
            {
                RunDirectory.TryDelete(root);
            }
        }
    }

    private static async Task<ModeResults> RunModeAsync(TwoPhaseCommitOptions options, bool speculative, bool chaos, int seed, string root, TextWriter? progress, CancellationToken cancellationToken)
    {
        string name = speculative ? "speculative" : "non-speculative";
        string directory = RunDirectory.Fresh(root, speculative ? "spec" : "nonspec");

        progress?.WriteLine($"{name}: starting the cluster (DSE coordinator, committer, 4 participants) in {directory}");
        long clusterStarting = Stopwatch.GetTimestamp();
        await using var cluster = await LocalCluster.StartAsync(directory, speculative, options.GroupCommit, tieredPgo: options.TieredPgo, tls: options.Tls, cancellationToken: cancellationToken).ConfigureAwait(false);
        using var load = new LoadGenerator(cluster);

        // Warm-up (JIT, connections), not measured; its transactions are checked with the rest.
        int warmUp = options.EffectiveWarmUpTransactions;
        progress?.WriteLine(string.Create(CultureInfo.InvariantCulture, $"{name}: cluster serving after {Stopwatch.GetElapsedTime(clusterStarting).TotalSeconds:F1} s; warming up with {warmUp} transactions (not measured)"));
        await load.RunAsync(1, warmUp, options.Clients, null, cancellationToken).ConfigureAwait(false);

        var random = new Random(seed);
        int victim = random.Next(cluster.ParticipantAddresses.Count);
        int killAfter = random.Next(Math.Max(1, options.Transactions / 5), Math.Max(2, options.Transactions * 3 / 5));
        Task chaosTask = Task.CompletedTask;
        Task<IReadOnlyList<ForgedHeaderOutcome>> forgeTask = Task.FromResult<IReadOnlyList<ForgedHeaderOutcome>>([]);
        int forgeAfter = Math.Max(1, options.Transactions / 2);
        long restartedAt = long.MaxValue;
        int kills = 0;
        int tenth = Math.Max(1, options.Transactions / 10);
        long loadStarted = Stopwatch.GetTimestamp();
        if (chaos)
        {
            progress?.WriteLine($"{name}: chaos (seed {seed}): participant-{victim} will be killed (SIGKILL) after {killAfter} transactions");
        }

        void OnFinished(int finished)
        {
            if (finished % tenth == 0 && finished < options.Transactions)
            {
                progress?.WriteLine(string.Create(CultureInfo.InvariantCulture, $"{name}: {finished} transactions done after {Stopwatch.GetElapsedTime(loadStarted).TotalSeconds:F1} s"));
            }

            if (options.Forge && finished == forgeAfter)
            {
                forgeTask = Task.Run(() => ForgedHeaders.SendAsync(load.Participants, cancellationToken), cancellationToken);
            }

            if (chaos && finished == killAfter)
            {
                chaosTask = Task.Run(async () =>
                {
                    long killedAt = Stopwatch.GetTimestamp();
                    await cluster.KillAndRestartParticipantAsync(victim, cancellationToken).ConfigureAwait(false);
                    Interlocked.Exchange(ref restartedAt, Stopwatch.GetTimestamp());
                    Interlocked.Increment(ref kills);
                    progress?.WriteLine($"{name}: chaos: killed participant-{victim} and restarted it on its port and storage; it served again after {Stopwatch.GetElapsedTime(killedAt).TotalSeconds:F1} s");
                }, cancellationToken);
            }
        }

        progress?.WriteLine($"{name}: running {options.Transactions} transactions from {options.Clients} closed-loop clients");
        var outcome = await load.RunAsync(warmUp + 1, options.Transactions, options.Clients, OnFinished, cancellationToken).ConfigureAwait(false);
        await chaosTask.ConfigureAwait(false);
        var forged = await forgeTask.ConfigureAwait(false);
        if (options.Forge)
        {
            progress?.WriteLine($"{name}: forged headers: {forged.Count(f => f.AsExpected)} of {forged.Count} answered as the header rules call for");
        }

        // Quiesce: no commit in flight at the committer, then each participant's records as of a barrier (recoverable).
        progress?.WriteLine($"{name}: quiescing and checking atomicity on the participants' logs");
        var replies = await CollectOutcomesAsync(load, cluster, cancellationToken).ConfigureAwait(false);
        var committed = outcome.Committed.ToArray();
        var violations = AtomicityChecker.Check(replies, committed.Select(c => c.Transaction), out int examined);
        long restarted = Interlocked.Read(ref restartedAt);
        return new ModeResults
        {
            Speculative = speculative,
            CommitLatenciesMs = committed.Select(c => c.LatencyMs).ToArray(),
            Committed = committed.Length,
            Aborted = outcome.Aborted,
            Failed = outcome.Failed,
            NotCommittedReasons = new Dictionary<string, int>(outcome.Reasons, StringComparer.Ordinal),
            Kills = kills,
            CommittedAfterRestart = committed.Count(c => c.BeganAt > restarted),
            Violations = violations,
            CheckedTransactions = examined,
            Elapsed = outcome.Elapsed,
            ForgedHeaders = forged,
        };
    }

    private static async Task<List<OutcomesReply>> CollectOutcomesAsync(LoadGenerator load, LocalCluster cluster, CancellationToken cancellationToken)
    {
        await RetryAsync("quiesce the committer", cluster, async deadline => await load.Committer.QuiesceAsync(new QuiesceRequest(), deadline: deadline, cancellationToken: cancellationToken), cancellationToken).ConfigureAwait(false);
        var replies = new List<OutcomesReply>();
        for (int i = 0; i < load.Participants.Count; i++)
        {
            var participant = load.Participants[i];
            replies.Add(await RetryAsync($"read participant-{i}'s outcomes", cluster, async deadline => await participant.OutcomesAsync(new OutcomesRequest(), deadline: deadline, cancellationToken: cancellationToken), cancellationToken).ConfigureAwait(false));
        }

        return replies;
    }

    /// <summary>A plain call (released after a barrier), retried while a rollback or restart gets in its way.</summary>
    private static Task<T> RetryAsync<T>(string what, LocalCluster cluster, Func<DateTime, Task<T>> call, CancellationToken cancellationToken) =>
        PlainCalls.RetryAsync(what, cluster.Describe, call, QuiesceTimeout, cancellationToken);

    /// <summary>Invariant formatting for result lines.</summary>
    internal static string Format(double value, int decimals = 2) => value.ToString("F" + decimals.ToString(CultureInfo.InvariantCulture), CultureInfo.InvariantCulture);
}
