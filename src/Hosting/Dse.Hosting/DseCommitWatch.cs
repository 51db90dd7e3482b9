using System.Diagnostics;
using System.Globalization;

namespace Dse.Hosting;

/// <summary>
/// Whether one StateObject can still commit, for health. When a probe finds versions of it that are not committed, the
/// watch persists its current version and times how long that version takes to commit; a probe that finds the same
/// wait older than the threshold reports the StateObject stuck. At most one wait runs at a time; probes never wait.
/// </summary>
/// <remarks>
/// Persisting on demand is what makes the rule exact with only public state: <c>CurrentVersion - 1 &gt;
/// CommittedVersion</c> alone also holds for version numbers that were skipped (after a restart, or a commit-ordering
/// jump) and will never be persisted, so it would flag an idle StateObject that is fine. A version the watch persisted
/// itself always commits when the StateObject can commit.
/// </remarks>
internal sealed class DseCommitWatch(StateObject stateObject, TimeProvider time)
{
    // Guards the fields below. Invariant: _waiting is null or the wait for (_version, _worldLine), started at _started.
    private readonly Lock _lock = new();
    private Task? _waiting;
    private long _version;
    private long _worldLine;
    private long _started;

    /// <summary>
    /// Whether a wait runs and its version has not committed; a wait whose version the view shows committed is over,
    /// even if its task has not finished yet. Under <see cref="_lock"/>.
    /// </summary>
    private bool IsWaiting =>
        _waiting is { IsCompleted: false } && !(stateObject.CommittedVersion >= _version && stateObject.WorldLine == _worldLine);

    /// <summary>
    /// Checks the commit and starts a wait if versions are uncommitted and none runs. Returns <c>null</c> while the
    /// StateObject commits (or nothing waits), otherwise why it is stuck.
    /// </summary>
    /// <param name="threshold">How long a wait may last; <see cref="Timeout.InfiniteTimeSpan"/> turns the check off.</param>
    /// <param name="stopping">Ends a wait when the host stops.</param>
    public string? Check(TimeSpan threshold, CancellationToken stopping)
    {
        if (threshold == Timeout.InfiniteTimeSpan)
        {
            return null;
        }

        lock (_lock)
        {
            AssertInvariants();
            if (IsWaiting)
            {
                var waited = time.GetElapsedTime(_started);
                return waited < threshold ? null : Describe(waited, threshold);
            }

            _waiting = null;
            if (stateObject.CurrentVersion - 1 <= stateObject.CommittedVersion || stopping.IsCancellationRequested)
            {
                return null;
            }

            long version = stateObject.CurrentVersion;
            long worldLine = stateObject.WorldLine;
            (_version, _worldLine, _started) = (version, worldLine, time.GetTimestamp());

            // On the thread pool: the persist it starts must not run under this lock or on the probe's thread.
            _waiting = Task.Run(() => WaitAsync(version, worldLine, stopping), CancellationToken.None);
            return null;
        }
    }

    /// <summary>Restarts the clock of a running wait: time the coordinator could not commit anything does not count.</summary>
    public void Pause()
    {
        lock (_lock)
        {
            if (IsWaiting)
            {
                _started = time.GetTimestamp();
            }
        }
    }

    /// <summary>Persists the current version and waits for it to commit; a rollback, fault or stop also ends the wait.</summary>
    private async Task WaitAsync(long version, long worldLine, CancellationToken stopping)
    {
        try
        {
            await stateObject.AdvanceVersionAsync(stopping).ConfigureAwait(false);
            await stateObject.WaitForCommitAsync(version, worldLine, stopping).ConfigureAwait(false);
        }
        catch (Exception)
        {
            // Whatever ended the wait, it is not a stall: a rollback is recovery at work, and a fault (a failed persist
            // faults the StateObject) or the host's stop shows in health on its own.
        }
    }

    private string Describe(TimeSpan waited, TimeSpan threshold)
    {
        var view = stateObject.ClusterView;
        var boundary = string.Join(", ", view.Committed.OrderBy(static e => e.Key).Select(static e => $"{e.Key}: {e.Value}"));
        string waitedSeconds = waited.TotalSeconds.ToString("F1", CultureInfo.InvariantCulture);
        string thresholdSeconds = threshold.TotalSeconds.ToString("F1", CultureInfo.InvariantCulture);
        return $"StateObject {stateObject.Id} cannot commit: version {_version} (world-line {_worldLine}) has waited {waitedSeconds} s to commit "
            + $"({DseHostingOptions.Key(nameof(DseHostingOptions.CommitStallTimeout))} is {thresholdSeconds} s); its committed version is "
            + $"{stateObject.CommittedVersion}, the boundary (StateObject: committed version) is {{{boundary}}} in world-line {view.WorldLine}. "
            + "Its persist has not completed and been reported, or its versions depend on versions that do not commit: state another participant lost, or a participant that does not persist or report.";
    }

    [Conditional("DEBUG")]
    private void AssertInvariants()
    {
        Debug.Assert(_waiting is null || _started != 0, "A running wait has a start time.");
    }
}
