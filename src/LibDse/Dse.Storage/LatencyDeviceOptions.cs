namespace Dse.Storage;

/// <summary>Options of a <see cref="LatencyDevice"/>.</summary>
public sealed class LatencyDeviceOptions
{
    /// <summary>Delay before each write (and asynchronous segment removal) is forwarded. Default zero.</summary>
    public TimeSpan WriteLatency { get; set; } = TimeSpan.Zero;

    /// <summary>Delay before each read is forwarded. Default zero (reads pass straight through).</summary>
    public TimeSpan ReadLatency { get; set; } = TimeSpan.Zero;

    /// <summary>
    /// Upper bound of a uniformly random extra delay added to every nonzero delay, drawn from a
    /// <see cref="Random"/> seeded with <see cref="Seed"/>. Default zero (no jitter).
    /// </summary>
    public TimeSpan Jitter { get; set; } = TimeSpan.Zero;

    /// <summary>Seed of the jitter generator, so that a run can be replayed. Default 0.</summary>
    public int Seed { get; set; }

    /// <summary>The clock whose timers schedule the delays. Default <see cref="TimeProvider.System"/>; tests pass a fake one.</summary>
    public TimeProvider TimeProvider { get; set; } = TimeProvider.System;

    internal void Validate()
    {
        ArgumentOutOfRangeException.ThrowIfLessThan(WriteLatency, TimeSpan.Zero);
        ArgumentOutOfRangeException.ThrowIfLessThan(ReadLatency, TimeSpan.Zero);
        ArgumentOutOfRangeException.ThrowIfLessThan(Jitter, TimeSpan.Zero);
        ArgumentNullException.ThrowIfNull(TimeProvider);
    }
}
