namespace Dse.Coordinator.Tests.Infrastructure;

/// <summary>What a log does when a second incarnation opens it while the first is alive.</summary>
public enum FencingMode
{
    /// <summary>The newcomer takes over; the older instance's appends throw <see cref="CoordinatorLogFencedException"/>.</summary>
    NewcomerTakesOver,

    /// <summary>The newcomer's open throws <see cref="CoordinatorLogFencedException"/>; the holder keeps appending.</summary>
    HolderKeepsLog,
}
