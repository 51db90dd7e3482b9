using System.Diagnostics;
using Dse.Storage;
using FASTER.core;
using Microsoft.Extensions.Logging;
using Microsoft.Extensions.Logging.Abstractions;

namespace Dse.Darq;

/// <summary>
/// What every part of a DARQ shares: its FasterLog with the commit manager and storage fences, the gate that serializes
/// every mutation, the sequence numbers entries carry, the current processor registration, and whether the DARQ is closed.
/// It owns none of the state the entries describe (the inbox, outbox and producer table do).
/// </summary>
/// <remarks>
/// Invariant: <see cref="NextSequence"/>, <see cref="BeginSequence"/>, <see cref="Incarnation"/> and
/// <see cref="Processor"/> change only under <see cref="Gate"/>, and the entries appended under one hold of the gate take
/// consecutive sequence numbers from <see cref="NextSequence"/>, so the log holds every number from
/// <see cref="BeginSequence"/> on exactly once.
/// </remarks>
internal sealed class DarqCore
{
    private long _incarnation;
    private DarqProcessor? _processor;
    private int _closed;

    /// <summary>Cancelled when the DARQ closes: every background loop ends on it.</summary>
    private readonly CancellationTokenSource _stopping = new();

    /// <summary>The fences of <see cref="_fences"/> another instance can take over (leases): what every step checks.</summary>
    private readonly StorageFence[] _losableFences;

    /// <summary>The fences on the log and commit devices that hold something, from open to close; empty when not exclusive.</summary>
    private readonly StorageFence[] _fences;

    public DarqCore(DarqOptions options, FasterLog log, DarqCommitManager commitManager, StorageFence[] fences, ILogger logger)
    {
        Options = options;
        Log = log;
        CommitManager = commitManager;
        Logger = logger;
        _fences = fences;
        _losableFences = [.. fences.Where(fence => fence.CanBeLost)];
        Tag = new KeyValuePair<string, object?>("darq", options.Name);
    }

    public DarqOptions Options { get; }

    public string Name => Options.Name;

    public ILogger Logger { get; }

    /// <summary>The <c>darq</c> tag every instrument of this DARQ records with.</summary>
    public KeyValuePair<string, object?> Tag { get; }

    public FasterLog Log { get; }

    public DarqCommitManager CommitManager { get; }

    /// <summary>Serializes every mutation and commit request.</summary>
    public DarqGate Gate { get; } = new();

    /// <summary>The sequence number of the next entry appended; under the gate.</summary>
    public long NextSequence { get; set; }

    /// <summary>The sequence number of the entry at the begin address; under the gate.</summary>
    public long BeginSequence { get; set; }

    /// <summary>The current processor incarnation (0 before the first registration); written under the gate, read anywhere.</summary>
    public long Incarnation
    {
        get => Volatile.Read(ref _incarnation);
        set => Interlocked.Exchange(ref _incarnation, value);
    }

    /// <summary>The registered processor, or null; written under the gate, read anywhere.</summary>
    public DarqProcessor? Processor
    {
        get => Volatile.Read(ref _processor);
        set => Volatile.Write(ref _processor, value);
    }

    /// <summary>Whether the DARQ is closing or closed.</summary>
    public bool IsClosed => Volatile.Read(ref _closed) != 0;

    /// <summary>Marks the DARQ closed; returns false when it was already.</summary>
    public bool TryClose() => Interlocked.Exchange(ref _closed, 1) == 0;

    /// <summary>Cancelled when the DARQ closes: every background loop ends on it.</summary>
    public CancellationToken Stopping => _stopping.Token;

    /// <summary>Stops the background loops (they end on <see cref="Stopping"/>).</summary>
    public Task StopAsync() => _stopping.CancelAsync();

    /// <summary>Frees the stopping token's resources, once every loop ended.</summary>
    public void DisposeStopping() => _stopping.Dispose();

    /// <summary>Opens the FasterLog of a DARQ on its log device with the given commit manager.</summary>
    public static FasterLog OpenLog(DarqOptions options, DarqCommitManager commitManager) => new(FasterLogs.Settings(
        options.LogDevice!, commitManager, options.PageSize, options.MemorySize, options.SegmentSize), (ILogger?)null);

    /// <summary>Throws when the DARQ is closed, or fenced by another instance.</summary>
    public void ThrowIfClosed()
    {
        ObjectDisposedException.ThrowIf(IsClosed, typeof(Darq));
        ThrowIfFenced();
    }

    /// <summary>Refuses a payload larger than <see cref="DarqOptions.MaxMessageSize"/>.</summary>
    public void CheckPayload(int length, string parameter)
    {
        if (length > Options.MaxMessageSize)
        {
            throw new ArgumentException(
                $"The message has {length} bytes; DARQ '{Name}' accepts at most {Options.MaxMessageSize} (DarqOptions.MaxMessageSize).", parameter);
        }
    }

    /// <summary>Appends one entry; call under the gate. Waits for log memory when the in-memory log is full.</summary>
    public ValueTask<long> AppendAsync(byte[] entry, CancellationToken cancellationToken)
    {
        Debug.Assert(Gate.CurrentCount == 0, "appends run under the gate");
        return Log.TryEnqueue(entry, out long lsn) ? ValueTask.FromResult(lsn) : Log.EnqueueAsync(entry, cancellationToken);
    }

    /// <summary>Appends entries contiguously as one batch; call under the gate. Returns each entry's address.</summary>
    public async ValueTask<long[]> AppendBatchAsync(List<byte[]> entries, CancellationToken cancellationToken)
    {
        Debug.Assert(Gate.CurrentCount == 0, "appends run under the gate");
        var batch = new EntryBatch(entries);
        if (!Log.TryEnqueue(batch, out long first))
        {
            first = await Log.EnqueueAsync(batch, cancellationToken).ConfigureAwait(false);
        }

        // FasterLog reports only the first address of a batch: the others follow at aligned sizes.
        var addresses = new long[entries.Count];
        long address = first;
        for (int i = 0; i < entries.Count; i++)
        {
            addresses[i] = address;
            address += DarqEntryFormat.LogFootprint(entries[i].Length);
        }

        return addresses;
    }

    /// <summary>Waits until the log is durable up to <paramref name="address"/>; issues no commit.</summary>
    /// <exception cref="IOException">Commit-record writes to the commit device keep failing.</exception>
    public ValueTask WaitForCommitAsync(long address, CancellationToken cancellationToken)
        => Log.CommittedUntilAddress >= address ? ValueTask.CompletedTask : UntilCommitFailureAsync(Log.WaitForCommitAsync(address, -1, cancellationToken));

    /// <summary>
    /// Awaits a commit wait, or fails with the commit manager's <see cref="IOException"/> when commit-record writes keep
    /// failing (the commit wait alone would then not end until the device recovers); a failure caused by another instance
    /// taking the storage over is a <see cref="StorageFencedException"/>.
    /// </summary>
    public async ValueTask UntilCommitFailureAsync(ValueTask commitWait)
    {
        try
        {
            if (commitWait.IsCompleted)
            {
                await commitWait.ConfigureAwait(false);
                return;
            }

            var wait = commitWait.AsTask();
            var failure = CommitManager.Failure;
            if (await Task.WhenAny(wait, failure).ConfigureAwait(false) == failure)
            {
                // The abandoned wait may still fault (the log is disposed later); observe it.
                _ = wait.ContinueWith(static t => _ = t.Exception, CancellationToken.None, TaskContinuationOptions.OnlyOnFaulted, TaskScheduler.Default);
                await failure.ConfigureAwait(false);
            }

            await wait.ConfigureAwait(false);
        }
        catch (Exception e) when (e is IOException or CommitFailureException && e is not StorageFencedException && FencedException() is { } fenced)
        {
            // A log page write refused for fencing surfaces from FasterLog as a plain commit failure: say why.
            throw fenced;
        }
    }

    /// <summary>The error for a DARQ whose storage another instance took over, or <see langword="null"/> while it owns it.</summary>
    public StorageFencedException? FencedException()
    {
        foreach (var fence in _losableFences)
        {
            if (fence.IsLost)
            {
                return fence.LostException($"DARQ '{Name}'");
            }
        }

        return null;
    }

    public void ThrowIfFenced()
    {
        if (FencedException() is { } fenced)
        {
            throw fenced;
        }
    }

    /// <summary>The error for a log that does not read back as a DARQ wrote it, naming the device and address.</summary>
    public InvalidDataException Corrupt(long address, string detail)
        => new($"DARQ '{Name}' log on device '{Options.LogDevice!.FileName}' is corrupt at address {address} (0x{address:X}): {detail}.");

    /// <summary>Disposes the log, the commit manager (and the commit device when owned) and the log device when owned.</summary>
    public void CloseStorage()
    {
        try
        {
            Log.Dispose();
        }
        finally
        {
            CommitManager.Dispose();
            if (Options.OwnsDevices)
            {
                Options.LogDevice!.Dispose();
            }
        }
    }

    /// <summary>Releases every fence (last, once nothing of this instance writes any more).</summary>
    public ValueTask ReleaseFencesAsync() => ReleaseAsync(_fences);

    /// <summary>
    /// Releases what a process's death would release (local lock files) without closing anything else: for in-process
    /// tests that abandon an instance as a crash and open the same storage again. Page blob leases stay, as they would
    /// after a crash (the next instance breaks them).
    /// </summary>
    public async ValueTask ReleaseFencesAsProcessExitWouldAsync()
    {
        foreach (var fence in _fences)
        {
            if (fence.ReleasedByProcessExit)
            {
                await fence.DisposeAsync().ConfigureAwait(false);
            }
        }
    }

    /// <summary>Takes both devices' fences (the log device's first), or none when the storage need not be exclusive.</summary>
    public static async Task<StorageFence[]> AcquireFencesAsync(DarqOptions options, ILoggerFactory? loggerFactory, CancellationToken cancellationToken)
    {
        if (!options.ExclusiveStorage)
        {
            return [];
        }

        var logger = loggerFactory?.CreateLogger<StorageFence>() ?? (ILogger)NullLogger.Instance;
        StorageFence? logFence = null;
        try
        {
            logFence = await StorageFence.AcquireAsync(options.LogDevice!, logger, cancellationToken).ConfigureAwait(false);
            var commitFence = await StorageFence.AcquireAsync(options.CommitDevice!, logger, cancellationToken).ConfigureAwait(false);

            // Fences that hold nothing (in-memory devices) are left out, so that checking for a lost fence costs nothing there.
            return (logFence.IsExclusive, commitFence.IsExclusive) switch
            {
                (true, true) => [logFence, commitFence],
                (true, false) => [logFence],
                (false, true) => [commitFence],
                _ => [],
            };
        }
        catch (StorageFencedException e)
        {
            if (logFence is not null)
            {
                await logFence.DisposeAsync().ConfigureAwait(false);
            }

            throw new StorageFencedException($"DARQ '{options.Name}' cannot open: {e.Message}", e);
        }
        catch
        {
            if (logFence is not null)
            {
                await logFence.DisposeAsync().ConfigureAwait(false);
            }

            throw;
        }
    }

    public static async ValueTask ReleaseAsync(StorageFence[] fences)
    {
        foreach (var fence in fences)
        {
            await fence.DisposeAsync().ConfigureAwait(false);
        }
    }

    /// <summary>Entries handed to FasterLog as one batch.</summary>
    private sealed class EntryBatch(List<byte[]> entries) : IReadOnlySpanBatch
    {
        public int TotalEntries() => entries.Count;

        public ReadOnlySpan<byte> Get(int index) => entries[index];
    }
}
