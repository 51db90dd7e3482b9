namespace Dse.Services;

/// <summary>A user entry of a <see cref="SpeculativeLog"/>, as returned by a scan.</summary>
/// <param name="Lsn">The entry's address (its log sequence number).</param>
/// <param name="NextLsn">Where a scan continues after this entry.</param>
/// <param name="Data">The entry's payload as appended.</param>
public readonly record struct SpeculativeLogEntry(long Lsn, long NextLsn, ReadOnlyMemory<byte> Data);
