using Dse.Storage;
using FASTER.core;

namespace Dse.Services;

/// <summary>
/// One open FasterKV instance of a <see cref="SpeculativeKv"/> with its device and checkpoint manager; replaced as a
/// whole on a restore. Operations open a session per call, so no idle session ever holds up a checkpoint.
/// </summary>
internal sealed class KvStore : IDisposable, IStateMachineCallback
{
    private readonly IDevice _device;
    private readonly KvCheckpointCatalog _checkpoints;

    // The FASTER version a checkpoint started from, and the signal that it has moved past it (or null).
    private long _watchedVersion = long.MaxValue;
    private TaskCompletionSource? _shifted;

    private KvStore(SpeculativeKvOptions options)
    {
        string hlog = Path.Combine(options.Directory!, "hlog");
        Directory.CreateDirectory(hlog);
        _device = DseDevices.CreateLocalFile(Path.Combine(hlog, "hlog.log"), new LocalFileDeviceOptions { RecoverDevice = true });
        // FASTER's own manager blocks the checkpointing thread (often a pool thread) on its writes: wrapped, the pool makes up for it.
        _checkpoints = new KvCheckpointCatalog(new PoolSafeCommitManager(new DeviceLogCommitCheckpointManager(
            new LocalStorageNamedDeviceFactory(), new DefaultCheckpointNamingScheme(Path.Combine(Path.GetFullPath(options.Directory!), "checkpoints")), removeOutdated: false)));
        Faster = new FasterKV<SpanByte, SpanByte>(
            options.IndexBuckets,
            new LogSettings
            {
                LogDevice = _device,
                PageSizeBits = options.PageSizeBits,
                MemorySizeBits = options.MemorySizeBits,
                SegmentSizeBits = options.SegmentSizeBits,
            },
            new CheckpointSettings { CheckpointManager = _checkpoints, RemoveOutdated = false });
        Faster.UnsafeRegisterCallback(this);
    }

    public FasterKV<SpanByte, SpanByte> Faster { get; }

    public KvCheckpointCatalog Checkpoints => _checkpoints;

    /// <summary>
    /// Opens the store: empty (no manifest), or recovered from the manifest's index and hybrid log checkpoints.
    /// </summary>
    public static async Task<KvStore> OpenAsync(SpeculativeKvOptions options, KvManifest? manifest, CancellationToken cancellationToken)
    {
        var store = new KvStore(options);
        try
        {
            if (manifest is { LogToken: var logToken, IndexToken: var indexToken })
            {
                if (manifest.LogMetadata.Length > 0)
                {
                    store._checkpoints.Register(logToken, manifest.LogMetadata);
                }

                await store.Faster.RecoverAsync(indexToken, logToken, cancellationToken: cancellationToken).ConfigureAwait(false);
            }

            return store;
        }
        catch
        {
            store.Dispose();
            throw;
        }
    }

    /// <summary>Deletes the hybrid log files, so an empty store starts on empty storage. Only with no store open.</summary>
    public static void DeleteLog(SpeculativeKvOptions options)
    {
        string hlog = Path.Combine(options.Directory!, "hlog");
        if (Directory.Exists(hlog))
        {
            Directory.Delete(hlog, recursive: true);
        }
    }

    /// <summary>
    /// Starts a fold-over checkpoint (with the index when <paramref name="withIndex"/>) and returns its token, with a task
    /// that completes once FASTER has moved to its next version: from then on new operations are not in the checkpoint.
    /// </summary>
    /// <exception cref="InvalidOperationException">Another checkpoint is still running.</exception>
    public (Guid Token, Task Shifted) StartCheckpoint(bool withIndex)
    {
        var shifted = new TaskCompletionSource(TaskCreationOptions.RunContinuationsAsynchronously);
        long version = Faster.CurrentVersion;
        Volatile.Write(ref _shifted, shifted);
        Volatile.Write(ref _watchedVersion, version);
        bool started = withIndex
            ? Faster.TryInitiateFullCheckpoint(out var token, CheckpointType.FoldOver)
            : Faster.TryInitiateHybridLogCheckpoint(out token, CheckpointType.FoldOver);
        if (!started)
        {
            throw new InvalidOperationException("FasterKV refused to start a checkpoint: another one is still running.");
        }

        // With no session open the version usually moves inside the call; otherwise the callback below signals it.
        if (Faster.SystemState.Version > version)
        {
            shifted.TrySetResult();
        }

        return (token, shifted.Task);
    }

    /// <inheritdoc />
    /// <remarks>
    /// Signals on entering any state after IN_PROGRESS (which is already current then): a session opened from then on
    /// works in the next version, whose operations the checkpoint excludes.
    /// </remarks>
    public void BeforeEnteringState<TKey, TValue>(SystemState next, FasterKV<TKey, TValue> faster)
    {
        var phase = next.Phase & ~Phase.INTERMEDIATE;
        if (next.Version > Volatile.Read(ref _watchedVersion) && phase is not (Phase.PREPARE or Phase.IN_PROGRESS or Phase.PREP_INDEX_CHECKPOINT))
        {
            Volatile.Read(ref _shifted)?.TrySetResult();
        }
    }

    public ClientSession<SpanByte, SpanByte, SpanByte, byte[], Empty, SpanByteFunctions_ByteArrayOutput<Empty>> NewSession() =>
        Faster.For(new SpanByteFunctions_ByteArrayOutput<Empty>()).NewSession<SpanByteFunctions_ByteArrayOutput<Empty>>();

    public void Dispose()
    {
        Faster.Dispose();
        _checkpoints.Dispose();
        _device.Dispose();
    }
}
