using Microsoft.Extensions.Logging;

namespace Dse;

/// <summary>Options of one StateObject's runtime; validated when the StateObject is created.</summary>
public sealed class DseOptions
{
    /// <summary>The StateObject's predetermined, cluster-unique id. Required; no default.</summary>
    public long ObjectId { get; set; } = -1;

    /// <summary>How often the background task advances (persists) the version when anything changed. Default 10 ms.</summary>
    public TimeSpan GroupCommitPeriod { get; set; } = TimeSpan.FromMilliseconds(10);

    /// <summary>
    /// Speculative (default <c>true</c>): headers leave an action at once. Non-speculative: <see cref="StateObject.EndActionAsync"/>
    /// persists the action's version and waits until it is recoverable before returning the header; the baseline mode.
    /// </summary>
    public bool Speculative { get; set; } = true;

    /// <summary>
    /// Whether the StateObject runs its own background tasks (periodic version advance, following the coordinator).
    /// Default <c>true</c>; a test or simulation turns it off and drives <see cref="StateObject.RefreshAsync"/> itself.
    /// </summary>
    public bool RunBackgroundTasks { get; set; } = true;

    /// <summary>
    /// How often the background task tells the coordinator the StateObject is alive. Default 1 s; keep it well below the
    /// coordinator's heartbeat timeout (the coordinator host defaults to 10 s).
    /// </summary>
    public TimeSpan HeartbeatPeriod { get; set; } = TimeSpan.FromSeconds(1);

    /// <summary>
    /// How far ahead of the cluster a message's version may be (docs/libdse.md, "Header rules"). Receiving a message
    /// from a higher version moves the local version up to it; one whose version exceeds both the local version and
    /// every committed version the coordinator published by more than this is refused
    /// (<see cref="DseHeaderRejectedException"/>), so that a forged header cannot push a StateObject to the end of the
    /// version space. Default 1,000,000 (about 2.8 hours of group commits at 10 ms, far beyond any outage).
    /// </summary>
    public long MaxVersionLead { get; set; } = 1_000_000;

    /// <summary>Time source for the group-commit period, heartbeats and the <c>dse.commit.lag</c> timings. Default <see cref="TimeProvider.System"/>.</summary>
    public TimeProvider TimeProvider { get; set; } = TimeProvider.System;

    /// <summary>Logger factory for the runtime. Default: no logging.</summary>
    public ILoggerFactory? LoggerFactory { get; set; }

    /// <summary>Throws an <see cref="ArgumentException"/> naming the first invalid option.</summary>
    public void Validate()
    {
        if (ObjectId < 0)
        {
            throw new ArgumentException($"{nameof(DseOptions)}.{nameof(ObjectId)} must be set to a non-negative, cluster-unique id (got {ObjectId}).", nameof(ObjectId));
        }

        if (GroupCommitPeriod <= TimeSpan.Zero || GroupCommitPeriod > TimeSpan.FromMinutes(10))
        {
            throw new ArgumentException($"{nameof(DseOptions)}.{nameof(GroupCommitPeriod)} must be positive and at most 10 minutes (got {GroupCommitPeriod}).", nameof(GroupCommitPeriod));
        }

        if (HeartbeatPeriod <= TimeSpan.Zero || HeartbeatPeriod > TimeSpan.FromMinutes(10))
        {
            throw new ArgumentException($"{nameof(DseOptions)}.{nameof(HeartbeatPeriod)} must be positive and at most 10 minutes (got {HeartbeatPeriod}).", nameof(HeartbeatPeriod));
        }

        if (MaxVersionLead <= 0)
        {
            throw new ArgumentException($"{nameof(DseOptions)}.{nameof(MaxVersionLead)} must be positive (got {MaxVersionLead}).", nameof(MaxVersionLead));
        }

        if (TimeProvider is null)
        {
            throw new ArgumentException($"{nameof(DseOptions)}.{nameof(TimeProvider)} must not be null.", nameof(TimeProvider));
        }
    }
}
