namespace Dse.Storage;

/// <summary>One entry read from a FasterLog (<see cref="FasterLogs.ScanAsync"/>): its bytes, address and the next entry's address.</summary>
/// <param name="Buffer">The entry's buffer (its own; at least <paramref name="Length"/> bytes).</param>
/// <param name="Length">The entry's length in bytes.</param>
/// <param name="Address">The entry's address (LSN).</param>
/// <param name="NextAddress">The address after the entry.</param>
public readonly record struct FasterLogEntry(byte[] Buffer, int Length, long Address, long NextAddress)
{
    /// <summary>The entry's bytes.</summary>
    public ReadOnlySpan<byte> Span => Buffer.AsSpan(0, Length);

    /// <summary>The entry's bytes as memory.</summary>
    public ReadOnlyMemory<byte> Memory => Buffer.AsMemory(0, Length);
}
