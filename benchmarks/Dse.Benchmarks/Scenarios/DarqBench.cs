using Dse.Darq;
using Dse.Storage;
using FASTER.core;

namespace Dse.Benchmarks.Scenarios;

/// <summary>
/// What the DARQ scenarios share: devices of one kind for DARQ and for the raw FasterLog it is compared with, the same
/// log settings and group commit for both, and a scratch directory that is removed afterwards.
/// </summary>
internal sealed class DarqBench : IDisposable
{
    public const int MessageSize = 1024;
    public static readonly TimeSpan CommitInterval = TimeSpan.FromMilliseconds(5);

    private readonly string _directory = Path.Combine(Path.GetTempPath(), "dse-bench-darq-" + Guid.NewGuid().ToString("N"));
    private int _next;

    public DarqBench(bool inMemory, long memorySize = 1L << 23)
    {
        InMemory = inMemory;
        MemorySize = memorySize;
        Directory.CreateDirectory(_directory);
    }

    /// <summary>Whether devices are in memory (else local files in a scratch directory).</summary>
    public bool InMemory { get; }

    /// <summary>The log's in-memory buffer, the same for DARQ and the raw log.</summary>
    public long MemorySize { get; }

    public string DeviceKind => InMemory ? "memory" : "local file";

    public IDevice NewDevice(string name) => InMemory
        ? DseDevices.CreateInMemory()
        : DseDevices.CreateLocalFile(Path.Combine(_directory, $"{name}-{Interlocked.Increment(ref _next)}.log"), DeleteOnClose);

    /// <summary>
    /// Each log's files go when it closes (a DARQ disposes its devices): a full darq-step run writes many gigabytes of
    /// logs, which would otherwise stay on disk until the run ends.
    /// </summary>
    private static readonly LocalFileDeviceOptions DeleteOnClose = new() { DeleteOnClose = true };

    /// <summary>A DARQ on fresh devices with the shared settings.</summary>
    /// <param name="maxBufferedInBytes">The IN payload budget; by default the larger of the default and the log's memory.</param>
    public Task<Darq.Darq> OpenDarqAsync(long? maxBufferedInBytes = null) => Darq.Darq.OpenAsync(new DarqOptions
    {
        Name = "bench",
        LogDevice = NewDevice("darq"),
        CommitDevice = NewDevice("darq-commit"),
        CommitInterval = CommitInterval,
        MemorySize = MemorySize,
        // The default budget, or more when the log's memory is larger (darq-step): IN payloads then stay in memory as
        // long as the log's do, so a step reads its message from memory on both sides.
        MaxBufferedInBytes = maxBufferedInBytes ?? Math.Max(MemorySize, new DarqOptions().MaxBufferedInBytes),
    });

    /// <summary>A raw FasterLog with DARQ's settings, committed every <see cref="CommitInterval"/> by a background loop.</summary>
    public RawLog OpenRaw()
    {
        var device = NewDevice("raw");
        var commitDirectory = Path.Combine(_directory, "raw-commits-" + Interlocked.Increment(ref _next));
        var log = new FasterLog(new FasterLogSettings
        {
            LogDevice = device,
            PageSize = 1L << 20,
            MemorySize = MemorySize,
            SegmentSize = 1L << 26,
            LogChecksum = LogChecksumType.None,
            AutoRefreshSafeTailAddress = false,
            AutoCommit = false,
            LogCommitManager = new DeviceLogCommitCheckpointManager(new LocalStorageNamedDeviceFactory(), new DefaultCheckpointNamingScheme(commitDirectory)),
        });
        return new RawLog(log, device);
    }

    public static byte[] Payload(int size = MessageSize)
    {
        var payload = new byte[size];
        new Random(7).NextBytes(payload);
        return payload;
    }

    public void Dispose()
    {
        try
        {
            Directory.Delete(_directory, recursive: true);
        }
        catch (IOException)
        {
            // A device still closing: the scratch directory is in the temp folder and harmless.
        }
    }

    /// <summary>The baseline: FasterLog enqueues with a periodic commit and nothing else.</summary>
    public sealed class RawLog : IAsyncDisposable
    {
        private readonly IDevice _device;
        private readonly CancellationTokenSource _stop = new();
        private readonly Task _commits;

        public RawLog(FasterLog log, IDevice device)
        {
            Log = log;
            _device = device;
            _commits = CommitLoopAsync();
        }

        public FasterLog Log { get; }

        public ValueTask<long> EnqueueAsync(byte[] entry) => Log.TryEnqueue(entry, out long address) ? ValueTask.FromResult(address) : Log.EnqueueAsync(entry);

        public async ValueTask DisposeAsync()
        {
            await _stop.CancelAsync();
            try
            {
                await _commits;
            }
            catch (OperationCanceledException)
            {
                // The loop ends by cancellation.
            }

            // Off this thread and bounded, as a DARQ closes its storage: a raw log that does not close must not hang the
            // whole run between two phases. The warning says which Dispose (the log's or the device's) did not return.
            int stage = 0;
            var closing = Task.Run(() =>
            {
                Log.Dispose();
                Volatile.Write(ref stage, 1);
                _device.Dispose();
            });
            if (await Task.WhenAny(closing, Task.Delay(CloseTimeout)) != closing)
            {
                string stuck = Volatile.Read(ref stage) == 0 ? "FasterLog.Dispose" : "the device's Dispose";
                await Console.Error.WriteLineAsync(
                    $"warning: a raw FasterLog did not close within {CloseTimeout.TotalSeconds:F0} s ({stuck} did not return); it is left open.");
            }

            _stop.Dispose();
        }

        /// <summary>How long <see cref="DisposeAsync"/> waits for the log and its device to close.</summary>
        private static readonly TimeSpan CloseTimeout = TimeSpan.FromSeconds(30);

        /// <summary>
        /// When set, each background commit first truncates the log until this address (what the consumer has
        /// finished with), as a DARQ's group commit truncates its completed prefix; 0 leaves the log whole.
        /// </summary>
        public long TruncateUntil
        {
            get => Volatile.Read(ref _truncateUntil);
            set => Volatile.Write(ref _truncateUntil, value);
        }

        private long _truncateUntil;

        private async Task CommitLoopAsync()
        {
            using var timer = new PeriodicTimer(CommitInterval);
            while (await timer.WaitForNextTickAsync(_stop.Token))
            {
                long until = TruncateUntil;
                if (until > Log.BeginAddress)
                {
                    Log.TruncateUntil(until);
                }

                Log.Commit();
            }
        }
    }
}
