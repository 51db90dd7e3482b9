namespace Dse.Darq;

/// <summary>Where a step (the unit truncation keeps whole) begins: its first entry's LSN and sequence number.</summary>
internal readonly record struct StepStart(long Lsn, long Sequence);
