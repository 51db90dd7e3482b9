using Dse.Storage;
using FASTER.core;

namespace Dse.Services.Tests;

/// <summary>Opens <see cref="SpeculativeLog"/> instances over one local-file storage, as a restarted process would.</summary>
internal sealed class LogHarness : IDisposable
{
    private readonly TempDirectory _dir = new();

    public string LogPath => Path.Combine(_dir.Path, "log", "entries");

    public string CommitPath => Path.Combine(_dir.Path, "commits");

    public static DseOptions Options(long id) =>
        // Background tasks follow the coordinator; the ten-minute period means versions advance only when a test says so.
        new() { ObjectId = id, RunBackgroundTasks = true, GroupCommitPeriod = TimeSpan.FromMinutes(10), HeartbeatPeriod = TimeSpan.FromMinutes(10) };

    /// <summary>Opens a new instance; <paramref name="wrap"/> may wrap its device (for fault injection).</summary>
    public SpeculativeLog Open(long id = 1, Func<IDevice, IDevice>? wrap = null, int maxEntryBytes = 16 * 1024)
    {
        IDevice device = DseDevices.CreateLocalFile(LogPath);
        if (wrap is not null)
        {
            device = wrap(device);
        }

        return new SpeculativeLog(Options(id), new SpeculativeLogOptions
        {
            LogDevice = device,
            CommitDirectory = CommitPath,
            OwnsStorage = true,
            PageSizeBits = 16,
            MemorySizeBits = 18,
            SegmentSizeBits = 20,
            MaxEntryBytes = maxEntryBytes,
        });
    }

    public void Dispose() => _dir.Dispose();
}
