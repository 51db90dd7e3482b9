namespace Dse.Samples.Counter;

/// <summary>How the Counter sample runs; every default gives the embedded demo.</summary>
public sealed class CounterAppOptions
{
    /// <summary>Speculative (default) or the non-speculative baseline that persists every step before it leaves.</summary>
    public bool Speculative { get; set; } = true;

    /// <summary>Latency added to every storage write, standing in for cloud storage. Default 5 ms.</summary>
    public TimeSpan WriteLatency { get; set; } = TimeSpan.FromMilliseconds(5);

    /// <summary>Group-commit period of every service. Default 10 ms.</summary>
    public TimeSpan GroupCommitPeriod { get; set; } = TimeSpan.FromMilliseconds(10);

    /// <summary>Folder for local-file storage; <c>null</c> (default) keeps storage in memory.</summary>
    public string? DataDirectory { get; set; }
}
