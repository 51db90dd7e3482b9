using Dse.Darq;

namespace Dse.Samples.SearchTrend;

/// <summary>How the search-trend sample runs; every default gives the embedded demo.</summary>
public sealed class SearchTrendOptions
{
    /// <summary>How DARQ speculates: off (the baseline), intra-participant (DARQ's default) or general (through LibDse).</summary>
    public DarqSpeculationMode Speculation { get; set; } = DarqSpeculationMode.IntraParticipant;

    /// <summary>Windows of search events the source sends, one window at a time. Default 40.</summary>
    public int Windows { get; set; } = 40;

    /// <summary>Search events per window. Default 100.</summary>
    public int WindowSize { get; set; } = 100;

    /// <summary>A term counted more than this many times in one window raises an alert. Default 15.</summary>
    public int Threshold { get; set; } = 15;

    /// <summary>Seeds the search events. Default 7.</summary>
    public int Seed { get; set; } = 7;

    /// <summary>
    /// Each DARQ's group commit, and under general speculation each DARQ's version period. Default 10 ms.
    /// </summary>
    public TimeSpan CommitInterval { get; set; } = TimeSpan.FromMilliseconds(10);

    /// <summary>
    /// Kills the count stage's processor a third of the way through, and (without general speculation) restarts the
    /// alert DARQ from its files two thirds of the way through. Default off.
    /// </summary>
    public bool Chaos { get; set; }

    /// <summary>Folder for the DARQs' log files; each run uses a new subfolder of it. Default: the system's temporary folder.</summary>
    public string? DataDirectory { get; set; }
}
