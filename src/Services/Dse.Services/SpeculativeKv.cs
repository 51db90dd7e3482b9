using System.Collections.Concurrent;
using System.IO.Hashing;
using Dse.Storage;

namespace Dse.Services;

/// <summary>
/// A key-value store under distributed speculative execution, on FasterKV with byte-string keys and values and one
/// FASTER checkpoint per persisted version. Writes are visible to every reader at once (speculatively: they may still be
/// rolled back until their version commits); a rollback reopens the store from the restored version's checkpoint.
/// </summary>
/// <remarks>
/// <para>Every operation must run inside an action of this StateObject (between a start and
/// <see cref="StateObject.EndAction()"/>): that makes readers depend on the version they observed, and keeps operations
/// out of Persist and Restore. Actions run concurrently, and so may operations.</para>
/// <para>Isolation: each single-key operation (get, put, delete, compare-and-swap) is atomic and linearizable; a stored
/// procedure runs alone (no other operation on this store runs meanwhile) and applies its writes all together or, if it
/// throws, not at all. An action spanning several operations is not a transaction: other actions' writes may interleave.</para>
/// <para>An operation normally completes synchronously; it waits only while a checkpoint is being started behind a
/// previous one still flushing (details in docs/services.md), or while another write to a key of the same stripe is
/// under way. Such waits are asynchronous: a waiting operation holds no thread, so the threads FASTER needs to finish
/// a checkpoint's writes (which may run inside another operation) are never all taken by waiters.</para>
/// <para>One instance owns the directory, from construction to dispose (<see cref="SpeculativeKvOptions.ExclusiveStorage"/>):
/// a second instance on it, in this process or another, is refused with a <see cref="StorageFencedException"/> naming
/// the lock file.</para>
/// </remarks>
public sealed class SpeculativeKv : StateObject
{
    private const int StripeCount = 64;

    private readonly SpeculativeKvOptions _kvOptions;
    private readonly ConcurrentDictionary<string, Func<KvProcedureContext, ReadOnlyMemory<byte>, ReadOnlyMemory<byte>>> _procedures = new(StringComparer.Ordinal);

    // Single-key operations hold it shared, procedures exclusively.
    private readonly ReaderWriterLockSlim _exclusive = new(LockRecursionPolicy.NoRecursion);

    // Procedures queue here, asynchronously, before taking the lock above: then at most one thread at a time blocks on
    // the exclusive lock (and only while single-key operations drain). Without it every waiting procedure held a pool
    // thread blocked in EnterWriteLock, and under load the pool starved: replies, timers and I/O stalled for seconds.
    private readonly SemaphoreSlim _procedureGate = new(1, 1);

    // Writes to a key hold its stripe, so a compare-and-swap's read and write are atomic with respect to other writes.
    private readonly SemaphoreSlim[] _stripes = new SemaphoreSlim[StripeCount];

    // The versions: FASTER checkpoints, manifests, restore and pruning.
    private readonly KvCheckpointer _checkpoints;

    // Exclusive ownership of the directory from construction to dispose; null when not asked for.
    private readonly StorageFence? _fence;

    /// <summary>
    /// Creates the store over <see cref="SpeculativeKvOptions.Directory"/> and takes ownership of the directory; it opens
    /// when ConnectAsync restores.
    /// </summary>
    /// <exception cref="ArgumentException">An option is invalid; the message names it.</exception>
    /// <exception cref="StorageFencedException">Another instance owns the directory (its lock file is held); nothing was read or written.</exception>
    public SpeculativeKv(DseOptions options, SpeculativeKvOptions kvOptions)
        : base(options)
    {
        ArgumentNullException.ThrowIfNull(kvOptions);
        kvOptions.Validate();
        _kvOptions = kvOptions;
        for (int i = 0; i < StripeCount; i++)
        {
            _stripes[i] = new SemaphoreSlim(1, 1);
        }

        _checkpoints = new KvCheckpointer(kvOptions, Logger, Id);

        // Last, so that nothing after it can fail and leave the lock held; nothing reads the directory before ConnectAsync.
        if (kvOptions.ExclusiveStorage)
        {
            try
            {
                _fence = StorageFence.AcquireDirectory(kvOptions.Directory!, Logger);
            }
            catch (StorageFencedException e)
            {
                throw new StorageFencedException($"SpeculativeKv {Id} cannot open: {e.Message}", e);
            }
        }
    }

    /// <summary>Reads the value of <paramref name="key"/>, or null if absent. Call inside an action.</summary>
    /// <exception cref="ArgumentException">The key is empty or longer than <see cref="SpeculativeKvOptions.MaxKeyBytes"/>.</exception>
    public ValueTask<byte[]?> GetAsync(ReadOnlyMemory<byte> key, CancellationToken cancellationToken = default)
    {
        ValidateKey(key.Span);
        var barrier = _checkpoints.Barrier;
        return barrier.IsCompleted ? new ValueTask<byte[]?>(Get(key.Span)) : AfterBarrierAsync(barrier, () => Get(key.Span), cancellationToken);
    }

    /// <summary>Writes <paramref name="value"/> under <paramref name="key"/>. Call inside an action.</summary>
    /// <exception cref="ArgumentException">The key is empty or too long, or the value too long.</exception>
    public ValueTask PutAsync(ReadOnlyMemory<byte> key, ReadOnlyMemory<byte> value, CancellationToken cancellationToken = default)
    {
        ValidateKey(key.Span);
        ValidateValue(value.Span);
        var written = WriteAsync(key, value, hasValue: true, cancellationToken);
        return written.IsCompletedSuccessfully ? ValueTask.CompletedTask : new ValueTask(written.AsTask());
    }

    /// <summary>Deletes <paramref name="key"/>; returns whether it existed. Call inside an action.</summary>
    /// <exception cref="ArgumentException">The key is empty or too long.</exception>
    public ValueTask<bool> DeleteAsync(ReadOnlyMemory<byte> key, CancellationToken cancellationToken = default)
    {
        ValidateKey(key.Span);
        return WriteAsync(key, default, hasValue: false, cancellationToken);
    }

    /// <summary>
    /// Atomically replaces the value of <paramref name="key"/> with <paramref name="value"/> if it currently equals
    /// <paramref name="expected"/>; returns whether it did. A null <paramref name="expected"/> means "absent", a null
    /// <paramref name="value"/> deletes. Call inside an action.
    /// </summary>
    /// <exception cref="ArgumentException">The key is empty or too long, or the value too long.</exception>
    public ValueTask<bool> CompareAndSwapAsync(ReadOnlyMemory<byte> key, ReadOnlyMemory<byte>? expected, ReadOnlyMemory<byte>? value, CancellationToken cancellationToken = default)
    {
        ValidateKey(key.Span);
        if (value is { } v)
        {
            ValidateValue(v.Span);
        }

        var barrier = _checkpoints.Barrier;
        var stripe = StripeOf(key.Span);
        if (barrier.IsCompleted && stripe.Wait(0))
        {
            try
            {
                return new ValueTask<bool>(CompareAndSwap(key.Span, expected, value));
            }
            finally
            {
                stripe.Release();
            }
        }

        return InStripeAsync(barrier, stripe, () => CompareAndSwap(key.Span, expected, value), cancellationToken);
    }

    /// <summary>
    /// Registers (or replaces) a stored procedure: code that reads and writes through a <see cref="KvProcedureContext"/>
    /// and returns a result. Procedures are code, not state: register them again after a restart.
    /// </summary>
    /// <exception cref="ArgumentException">The name is empty.</exception>
    public void RegisterProcedure(string name, Func<KvProcedureContext, ReadOnlyMemory<byte>, ReadOnlyMemory<byte>> procedure)
    {
        ArgumentException.ThrowIfNullOrEmpty(name);
        ArgumentNullException.ThrowIfNull(procedure);
        _procedures[name] = procedure;
    }

    /// <summary>Whether a procedure is registered under <paramref name="name"/> (procedures are never unregistered).</summary>
    public bool HasProcedure(string name)
    {
        ArgumentNullException.ThrowIfNull(name);
        return _procedures.ContainsKey(name);
    }

    /// <summary>
    /// Runs a registered procedure alone on this store and applies its writes if it returns. Call inside an action.
    /// The procedure must not call back into this store except through its context.
    /// </summary>
    /// <exception cref="KeyNotFoundException">No procedure has that name.</exception>
    public ValueTask<ReadOnlyMemory<byte>> RunProcedureAsync(string name, ReadOnlyMemory<byte> input, CancellationToken cancellationToken = default)
    {
        ArgumentNullException.ThrowIfNull(name);
        if (!_procedures.TryGetValue(name, out var procedure))
        {
            throw new KeyNotFoundException($"SpeculativeKv {Id} has no procedure named '{name}'.");
        }

        var barrier = _checkpoints.Barrier;
        if (barrier.IsCompleted && _procedureGate.Wait(0))
        {
            try
            {
                return new ValueTask<ReadOnlyMemory<byte>>(Run(procedure, input));
            }
            finally
            {
                _procedureGate.Release();
            }
        }

        return InStripeAsync(barrier, _procedureGate, () => Run(procedure, input), cancellationToken);
    }

    internal void ValidateKey(ReadOnlySpan<byte> key)
    {
        if (key.IsEmpty)
        {
            throw new ArgumentException($"SpeculativeKv {Id}: a key must not be empty.", nameof(key));
        }

        if (key.Length > _kvOptions.MaxKeyBytes)
        {
            throw new ArgumentException($"SpeculativeKv {Id}: the key is {key.Length} bytes; at most {_kvOptions.MaxKeyBytes} are allowed.", nameof(key));
        }
    }

    internal void ValidateValue(ReadOnlySpan<byte> value)
    {
        if (value.Length > _kvOptions.MaxValueBytes)
        {
            throw new ArgumentException($"SpeculativeKv {Id}: the value is {value.Length} bytes; at most {_kvOptions.MaxValueBytes} are allowed.", nameof(value));
        }
    }

    private static async ValueTask<T> AfterBarrierAsync<T>(Task barrier, Func<T> operation, CancellationToken cancellationToken)
    {
        // Resume on the caller's context, not the pool: under DseServerInterceptor the caller's action ended at this
        // await (the call detached), and its context merges the call back into an action before the operation runs.
        // A caller that holds its action across the await has no context, so this changes nothing for it.
        await barrier.WaitAsync(cancellationToken).ConfigureAwait(true);
        return operation();
    }

    /// <summary>
    /// Waits for the barrier and then the stripe (or the procedure gate), asynchronously, and runs the operation holding
    /// it. Both waits resume on the caller's context, as <see cref="AfterBarrierAsync{T}"/> does.
    /// </summary>
    private static async ValueTask<T> InStripeAsync<T>(Task barrier, SemaphoreSlim stripe, Func<T> operation, CancellationToken cancellationToken)
    {
        await barrier.WaitAsync(cancellationToken).ConfigureAwait(true);
        await stripe.WaitAsync(cancellationToken).ConfigureAwait(true);
        try
        {
            return operation();
        }
        finally
        {
            stripe.Release();
        }
    }

    /// <summary>Puts (or, without a value, deletes) holding the key's stripe; returns whether the key existed before a delete.</summary>
    private ValueTask<bool> WriteAsync(ReadOnlyMemory<byte> key, ReadOnlyMemory<byte> value, bool hasValue, CancellationToken cancellationToken)
    {
        var barrier = _checkpoints.Barrier;
        var stripe = StripeOf(key.Span);
        if (barrier.IsCompleted && stripe.Wait(0))
        {
            try
            {
                return new ValueTask<bool>(Write(key.Span, value, hasValue));
            }
            finally
            {
                stripe.Release();
            }
        }

        return InStripeAsync(barrier, stripe, () => Write(key.Span, value, hasValue), cancellationToken);
    }

    private byte[]? Get(ReadOnlySpan<byte> key)
    {
        var store = OpenStore;
        _exclusive.EnterReadLock();
        try
        {
            using var session = store.NewSession();
            return KvOperations.Read(session, key);
        }
        finally
        {
            _exclusive.ExitReadLock();
        }
    }

    /// <summary>Puts (or, without a value, deletes); returns whether the key existed before a delete. Holding the key's stripe.</summary>
    private bool Write(ReadOnlySpan<byte> key, ReadOnlyMemory<byte> value, bool hasValue)
    {
        var store = OpenStore;
        _exclusive.EnterReadLock();
        try
        {
            using var session = store.NewSession();
            if (hasValue)
            {
                KvOperations.Upsert(session, key, value.Span);
                return true;
            }

            if (KvOperations.Read(session, key) is null)
            {
                return false;
            }

            KvOperations.Delete(session, key);
            return true;
        }
        finally
        {
            _exclusive.ExitReadLock();
        }
    }

    /// <summary>Compares and swaps, holding the key's stripe.</summary>
    private bool CompareAndSwap(ReadOnlySpan<byte> key, ReadOnlyMemory<byte>? expected, ReadOnlyMemory<byte>? value)
    {
        var store = OpenStore;
        _exclusive.EnterReadLock();
        try
        {
            using var session = store.NewSession();
            var current = KvOperations.Read(session, key);
            bool matches = expected is { } e ? current is not null && e.Span.SequenceEqual(current) : current is null;
            if (!matches)
            {
                return false;
            }

            if (value is { } v)
            {
                KvOperations.Upsert(session, key, v.Span);
            }
            else if (current is not null)
            {
                KvOperations.Delete(session, key);
            }

            return true;
        }
        finally
        {
            _exclusive.ExitReadLock();
        }
    }

    private ReadOnlyMemory<byte> Run(Func<KvProcedureContext, ReadOnlyMemory<byte>, ReadOnlyMemory<byte>> procedure, ReadOnlyMemory<byte> input)
    {
        var store = OpenStore;
        _exclusive.EnterWriteLock();
        try
        {
            using var session = store.NewSession();
            var context = new KvProcedureContext(this, session);
            ReadOnlyMemory<byte> result;
            try
            {
                result = procedure(context, input);
            }
            catch
            {
                context.Close();
                throw;
            }

            context.Apply();
            return result;
        }
        finally
        {
            _exclusive.ExitWriteLock();
        }
    }

    /// <summary>Takes the stripe of <paramref name="key"/> as a write does and holds it until disposed; for tests.</summary>
    internal async ValueTask<IDisposable> HoldStripeForTestAsync(ReadOnlyMemory<byte> key)
    {
        var stripe = StripeOf(key.Span);
        await stripe.WaitAsync().ConfigureAwait(false);
        return new StripeHold(stripe);
    }

    /// <summary>The durable versions, as a restart would list them; for tests.</summary>
    internal ValueTask<IReadOnlyList<PersistedVersion>> ListPersistedVersionsForTestAsync() => _checkpoints.ListVersionsAsync();

    private SemaphoreSlim StripeOf(ReadOnlySpan<byte> key) => _stripes[(int)(XxHash3.HashToUInt64(key) % StripeCount)];

    private KvStore OpenStore => _checkpoints.OpenStore;

    /// <inheritdoc />
    /// <remarks>
    /// Starts a fold-over checkpoint and returns once FASTER has moved to its next version (at once when no checkpoint is
    /// running). If the previous checkpoint is still flushing, this version joins a queued one and operations wait until
    /// it starts: until then the state cannot change, so versions persisted meanwhile share it.
    /// </remarks>
    protected override void Persist(long version, ReadOnlyMemory<byte> metadata, PersistCompletion completion) => _checkpoints.Persist(version, metadata, completion);

    /// <inheritdoc />
    /// <remarks>Waits for running checkpoints, deletes the later manifests, then reopens FASTER from the version's checkpoint.</remarks>
    protected override ValueTask<ReadOnlyMemory<byte>> RestoreAsync(long version, CancellationToken cancellationToken) => _checkpoints.RestoreAsync(version, cancellationToken);

    /// <inheritdoc />
    /// <remarks>
    /// Not while a checkpoint runs: FASTER takes one at a time, so a persist then would queue one and make every operation
    /// wait until it starts; the group commit waits for the running one instead, and the next version takes what came
    /// meanwhile.
    /// </remarks>
    protected override bool CanPersistNow => _checkpoints.Idle;

    /// <inheritdoc />
    /// <remarks>Deletes the manifests and the checkpoints no remaining version needs.</remarks>
    protected override void Prune(long version) => _checkpoints.Prune(version);

    /// <inheritdoc />
    protected override ValueTask<IReadOnlyList<PersistedVersion>> ListVersionsAsync(CancellationToken cancellationToken) => _checkpoints.ListVersionsAsync();

    /// <inheritdoc />
    protected override async ValueTask DisposeAsyncCore()
    {
        try
        {
            await base.DisposeAsyncCore().ConfigureAwait(false);

            // FASTER must not be disposed under a running checkpoint; failures were reported to the completions already.
            await _checkpoints.DisposeAsync().ConfigureAwait(false);
            _exclusive.Dispose();
            _procedureGate.Dispose();
            foreach (var stripe in _stripes)
            {
                stripe.Dispose();
            }
        }
        finally
        {
            // Last: once FASTER is closed, the next instance may open the directory.
            _fence?.Dispose();
        }
    }

    /// <summary>A held stripe, released once.</summary>
    private sealed class StripeHold(SemaphoreSlim stripe) : IDisposable
    {
        private int _released;

        public void Dispose()
        {
            if (Interlocked.Exchange(ref _released, 1) == 0)
            {
                stripe.Release();
            }
        }
    }
}
