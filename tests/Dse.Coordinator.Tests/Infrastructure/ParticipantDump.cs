namespace Dse.Coordinator.Tests.Infrastructure;

/// <summary>A participant's answer to DUMP: its state (the events it applied, in order) and where it stood.</summary>
public sealed record ParticipantDump(IReadOnlyList<string> Events, long Committed, long WorldLine, long Version);
