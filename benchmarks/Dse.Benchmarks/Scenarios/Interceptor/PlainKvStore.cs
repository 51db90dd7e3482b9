using System.IO.Hashing;
using Dse.Services;
using Dse.Storage;
using FASTER.core;

namespace Dse.Benchmarks.Scenarios.Interceptor;

/// <summary>
/// The no-DSE baseline's store: FasterKV with SpeculativeKv's key/value types and settings and the same per-operation
/// work (SpeculativeKv's own <see cref="KvOperations"/>, key and value checks, a session per operation, the shared lock
/// stored procedures would take exclusively, a stripe around writes, waited for asynchronously), persisted by a plain fold-over checkpoint
/// every group-commit period through the same <see cref="PoolSafeCommitManager"/> SpeculativeKv uses. No StateObject,
/// no actions, no headers: SpeculativeKv with the DSE protocol taken out. Nothing here takes the exclusive lock; its
/// shared side is taken per operation only so that operations cost what SpeculativeKv's do.
/// </summary>
internal sealed class PlainKvStore : IAsyncDisposable
{
    private const int StripeCount = 64;

    private readonly SpeculativeKvOptions _options;
    private readonly IDevice _device;
    private readonly PoolSafeCommitManager _checkpoints;
    private readonly FasterKV<SpanByte, SpanByte> _faster;
    private readonly ReaderWriterLockSlim _exclusive = new(LockRecursionPolicy.NoRecursion);
    private readonly SemaphoreSlim[] _stripes = new SemaphoreSlim[StripeCount];
    private readonly CancellationTokenSource _stop = new();
    private readonly Task _checkpointLoop;

    public PlainKvStore(SpeculativeKvOptions options, TimeSpan checkpointPeriod)
    {
        _options = options;
        string hlog = Path.Combine(options.Directory!, "hlog");
        Directory.CreateDirectory(hlog);
        _device = DseDevices.CreateLocalFile(Path.Combine(hlog, "hlog.log"), new LocalFileDeviceOptions { RecoverDevice = true });
        // FASTER's own manager blocks the checkpointing thread (a pool thread here) on its writes until their completion,
        // which needs a pool thread too; wrapped, as SpeculativeKv's is, the pool makes up for the blocked thread.
        _checkpoints = new PoolSafeCommitManager(new DeviceLogCommitCheckpointManager(
            new LocalStorageNamedDeviceFactory(), new DefaultCheckpointNamingScheme(Path.Combine(Path.GetFullPath(options.Directory!), "checkpoints")), removeOutdated: true));
        _faster = new FasterKV<SpanByte, SpanByte>(
            options.IndexBuckets,
            new LogSettings { LogDevice = _device, PageSizeBits = options.PageSizeBits, MemorySizeBits = options.MemorySizeBits, SegmentSizeBits = options.SegmentSizeBits },
            new CheckpointSettings { CheckpointManager = _checkpoints, RemoveOutdated = true });
        for (int i = 0; i < StripeCount; i++)
        {
            _stripes[i] = new SemaphoreSlim(1, 1);
        }

        _checkpointLoop = CheckpointLoopAsync(checkpointPeriod, _stop.Token);
    }

    /// <summary>Checkpoints taken so far.</summary>
    public long Checkpoints { get; private set; }

    public byte[]? Get(ReadOnlySpan<byte> key)
    {
        Validate(key, default);
        _exclusive.EnterReadLock();
        try
        {
            using var session = NewSession();
            return KvOperations.Read(session, key);
        }
        finally
        {
            _exclusive.ExitReadLock();
        }
    }

    /// <summary>Writes holding the key's stripe, taken without waiting when free and awaited otherwise, as SpeculativeKv does.</summary>
    public ValueTask PutAsync(ReadOnlyMemory<byte> key, ReadOnlyMemory<byte> value)
    {
        Validate(key.Span, value.Span);
        var stripe = _stripes[(int)(XxHash3.HashToUInt64(key.Span) % StripeCount)];
        if (stripe.Wait(0))
        {
            try
            {
                Put(key.Span, value.Span);
                return ValueTask.CompletedTask;
            }
            finally
            {
                stripe.Release();
            }
        }

        return PutSlowAsync(stripe, key, value);
    }

    private async ValueTask PutSlowAsync(SemaphoreSlim stripe, ReadOnlyMemory<byte> key, ReadOnlyMemory<byte> value)
    {
        await stripe.WaitAsync().ConfigureAwait(false);
        try
        {
            Put(key.Span, value.Span);
        }
        finally
        {
            stripe.Release();
        }
    }

    private void Put(ReadOnlySpan<byte> key, ReadOnlySpan<byte> value)
    {
        _exclusive.EnterReadLock();
        try
        {
            using var session = NewSession();
            KvOperations.Upsert(session, key, value);
        }
        finally
        {
            _exclusive.ExitReadLock();
        }
    }

    public async ValueTask DisposeAsync()
    {
        await _stop.CancelAsync().ConfigureAwait(false);
        await _checkpointLoop.ConfigureAwait(false);
        _stop.Dispose();
        _faster.Dispose();
        _checkpoints.Dispose();
        _device.Dispose();
        _exclusive.Dispose();
        foreach (var stripe in _stripes)
        {
            stripe.Dispose();
        }
    }

    private ClientSession<SpanByte, SpanByte, SpanByte, byte[], Empty, SpanByteFunctions_ByteArrayOutput<Empty>> NewSession() =>
        _faster.For(new SpanByteFunctions_ByteArrayOutput<Empty>()).NewSession<SpanByteFunctions_ByteArrayOutput<Empty>>();

    private void Validate(ReadOnlySpan<byte> key, ReadOnlySpan<byte> value)
    {
        if (key.IsEmpty || key.Length > _options.MaxKeyBytes || value.Length > _options.MaxValueBytes)
        {
            throw new ArgumentException($"Key of {key.Length} bytes or value of {value.Length} bytes out of bounds.", nameof(key));
        }
    }

    /// <summary>
    /// What a durable FASTER service without DSE does: a fold-over checkpoint per period (the index every 16th), taken
    /// while operations go on, as FASTER's concurrent checkpoints allow; the next starts when the previous has completed.
    /// </summary>
    /// <remarks>
    /// No lock is held around the checkpoint. FASTER runs parts of it (the commit-record write among them) on whichever
    /// thread refreshes its epoch next, an operation's included, and blocks that thread until the write completes on a
    /// pool thread. Behind a lock that operations wait on (a waiting writer of a reader/writer lock), every pool thread
    /// would block on the lock while the write waited for a free one, and the server would stall for seconds, long
    /// enough for Kestrel to drop connections.
    /// </remarks>
    private async Task CheckpointLoopAsync(TimeSpan period, CancellationToken stop)
    {
        using var timer = new PeriodicTimer(period);
        try
        {
            while (await timer.WaitForNextTickAsync(stop).ConfigureAwait(false))
            {
                bool started = Checkpoints % 16 == 0
                    ? _faster.TryInitiateFullCheckpoint(out _, CheckpointType.FoldOver)
                    : _faster.TryInitiateHybridLogCheckpoint(out _, CheckpointType.FoldOver);
                if (started)
                {
                    await _faster.CompleteCheckpointAsync(stop).ConfigureAwait(false);
                }

                Checkpoints++;
            }
        }
        catch (OperationCanceledException) when (stop.IsCancellationRequested)
        {
            // Disposing.
        }
    }
}
