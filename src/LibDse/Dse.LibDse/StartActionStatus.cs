namespace Dse;

/// <summary>The outcome of <see cref="StateObject.TryStartAction(in DseHeader)"/>.</summary>
public enum StartActionStatus
{
    /// <summary>The action started; end it with <see cref="StateObject.EndAction"/>.</summary>
    Accepted,

    /// <summary>The message comes from rolled-back state (a lower world-line): discard it. No action started.</summary>
    Discard,

    /// <summary>A version advance or rollback holds the StateObject; retry once it finishes. No action started.</summary>
    Blocked,

    /// <summary>The message comes from a higher version (commit ordering): advance the local version first. No action started.</summary>
    VersionBehind,

    /// <summary>The message comes from a higher world-line (recovery partition): apply pending rollbacks first. No action started.</summary>
    WorldLineBehind,

    /// <summary>
    /// The header names a participant the current view does not know, or a version implausibly far ahead (docs/libdse.md,
    /// "Header rules"): refresh the view and try once more, then refuse the message. No action started.
    /// </summary>
    Implausible,
}
