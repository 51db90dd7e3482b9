namespace Dse.Darq;

/// <summary>A commit issued under the gate (<see cref="DarqCommitter.IssueUnderGate"/>), and the log tail it covers.</summary>
internal readonly record struct IssuedCommit(ValueTask<(bool Success, long Tail, long CommitNum)> Pending, long Tail);
