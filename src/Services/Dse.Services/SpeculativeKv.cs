using System.Collections.Concurrent;
using System.IO.Hashing;

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
/// previous one still flushing (details in docs/services.md).</para>
/// </remarks>
public sealed partial class SpeculativeKv : StateObject
{
    private const int StripeCount = 64;

    private readonly SpeculativeKvOptions _kvOptions;
    private readonly ConcurrentDictionary<string, Func<KvProcedureContext, ReadOnlyMemory<byte>, ReadOnlyMemory<byte>>> _procedures = new(StringComparer.Ordinal);

    // Single-key operations hold it shared, procedures exclusively.
    private readonly ReaderWriterLockSlim _exclusive = new(LockRecursionPolicy.NoRecursion);

    // Writes to a key hold its stripe, so a compare-and-swap's read and write are atomic with respect to other writes.
    private readonly Lock[] _stripes = new Lock[StripeCount];

    /// <summary>Creates the store over <see cref="SpeculativeKvOptions.Directory"/>; it opens when ConnectAsync restores.</summary>
    /// <exception cref="ArgumentException">An option is invalid; the message names it.</exception>
    public SpeculativeKv(DseOptions options, SpeculativeKvOptions kvOptions)
        : base(options)
    {
        ArgumentNullException.ThrowIfNull(kvOptions);
        kvOptions.Validate();
        _kvOptions = kvOptions;
        for (int i = 0; i < StripeCount; i++)
        {
            _stripes[i] = new Lock();
        }
    }

    /// <summary>Reads the value of <paramref name="key"/>, or null if absent. Call inside an action.</summary>
    /// <exception cref="ArgumentException">The key is empty or longer than <see cref="SpeculativeKvOptions.MaxKeyBytes"/>.</exception>
    public ValueTask<byte[]?> GetAsync(ReadOnlyMemory<byte> key, CancellationToken cancellationToken = default)
    {
        ValidateKey(key.Span);
        var barrier = Volatile.Read(ref _barrier);
        return barrier.IsCompleted ? new ValueTask<byte[]?>(Get(key.Span)) : AfterBarrierAsync(barrier, () => Get(key.Span), cancellationToken);
    }

    /// <summary>Writes <paramref name="value"/> under <paramref name="key"/>. Call inside an action.</summary>
    /// <exception cref="ArgumentException">The key is empty or too long, or the value too long.</exception>
    public ValueTask PutAsync(ReadOnlyMemory<byte> key, ReadOnlyMemory<byte> value, CancellationToken cancellationToken = default)
    {
        ValidateKey(key.Span);
        ValidateValue(value.Span);
        var barrier = Volatile.Read(ref _barrier);
        if (barrier.IsCompleted)
        {
            Write(key.Span, value, hasValue: true);
            return ValueTask.CompletedTask;
        }

        return new ValueTask(AfterBarrierAsync(barrier, () => Write(key.Span, value, hasValue: true), cancellationToken).AsTask());
    }

    /// <summary>Deletes <paramref name="key"/>; returns whether it existed. Call inside an action.</summary>
    /// <exception cref="ArgumentException">The key is empty or too long.</exception>
    public ValueTask<bool> DeleteAsync(ReadOnlyMemory<byte> key, CancellationToken cancellationToken = default)
    {
        ValidateKey(key.Span);
        var barrier = Volatile.Read(ref _barrier);
        return barrier.IsCompleted ? new ValueTask<bool>(Write(key.Span, default, hasValue: false)) : AfterBarrierAsync(barrier, () => Write(key.Span, default, hasValue: false), cancellationToken);
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

        var barrier = Volatile.Read(ref _barrier);
        return barrier.IsCompleted ? new ValueTask<bool>(CompareAndSwap(key.Span, expected, value)) : AfterBarrierAsync(barrier, () => CompareAndSwap(key.Span, expected, value), cancellationToken);
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

        var barrier = Volatile.Read(ref _barrier);
        return barrier.IsCompleted ? new ValueTask<ReadOnlyMemory<byte>>(Run(procedure, input)) : AfterBarrierAsync(barrier, () => Run(procedure, input), cancellationToken);
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

    /// <summary>Puts (or, without a value, deletes); returns whether the key existed before a delete.</summary>
    private bool Write(ReadOnlySpan<byte> key, ReadOnlyMemory<byte> value, bool hasValue)
    {
        var store = OpenStore;
        _exclusive.EnterReadLock();
        try
        {
            using var session = store.NewSession();
            lock (StripeOf(key))
            {
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
        }
        finally
        {
            _exclusive.ExitReadLock();
        }
    }

    private bool CompareAndSwap(ReadOnlySpan<byte> key, ReadOnlyMemory<byte>? expected, ReadOnlyMemory<byte>? value)
    {
        var store = OpenStore;
        _exclusive.EnterReadLock();
        try
        {
            using var session = store.NewSession();
            lock (StripeOf(key))
            {
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

    private Lock StripeOf(ReadOnlySpan<byte> key) => _stripes[(int)(XxHash3.HashToUInt64(key) % StripeCount)];
}
