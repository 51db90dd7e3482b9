namespace Dse;

/// <summary>The outcome of an sthread's non-waiting operations.</summary>
public enum SthreadStatus
{
    /// <summary>Done: the message was received, or the barrier passed.</summary>
    Completed,

    /// <summary>The message comes from rolled-back state (a lower world-line): discard it.</summary>
    Discard,

    /// <summary>Not yet: the message is from a world-line the owner has not reached, or the barrier's dependencies are not all recoverable.</summary>
    Pending,
}
