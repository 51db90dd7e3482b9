using FASTER.core;

namespace Dse.Services;

/// <summary>
/// What a stored procedure of a <see cref="SpeculativeKv"/> sees: reads of the store as of the procedure's start plus its
/// own writes. Writes are buffered and applied together when the procedure returns; if it throws, none is applied.
/// </summary>
/// <remarks>Valid only during the procedure call; not thread-safe.</remarks>
public sealed class KvProcedureContext
{
    private readonly SpeculativeKv _owner;
    private readonly ClientSession<SpanByte, SpanByte, SpanByte, byte[], Empty, SpanByteFunctions_ByteArrayOutput<Empty>> _session;

    // Buffered writes by key; a null value is a delete.
    private readonly Dictionary<byte[], byte[]?> _writes = new(ByteArrayComparer.Instance);
    private bool _closed;

    internal KvProcedureContext(SpeculativeKv owner, ClientSession<SpanByte, SpanByte, SpanByte, byte[], Empty, SpanByteFunctions_ByteArrayOutput<Empty>> session)
    {
        _owner = owner;
        _session = session;
    }

    /// <summary>Reads a value (including this procedure's own writes); null when absent.</summary>
    /// <exception cref="ArgumentException">The key is empty or too long.</exception>
    public byte[]? Get(ReadOnlySpan<byte> key)
    {
        ThrowIfClosed();
        _owner.ValidateKey(key);
        return _writes.TryGetValue(key.ToArray(), out var written) ? written : KvOperations.Read(_session, key);
    }

    /// <summary>Writes a value, applied when the procedure returns.</summary>
    /// <exception cref="ArgumentException">The key is empty or too long, or the value too long.</exception>
    public void Put(ReadOnlySpan<byte> key, ReadOnlySpan<byte> value)
    {
        ThrowIfClosed();
        _owner.ValidateKey(key);
        _owner.ValidateValue(value);
        _writes[key.ToArray()] = value.ToArray();
    }

    /// <summary>Deletes a key, applied when the procedure returns; returns whether it existed.</summary>
    /// <exception cref="ArgumentException">The key is empty or too long.</exception>
    public bool Delete(ReadOnlySpan<byte> key)
    {
        bool existed = Get(key) is not null;
        _writes[key.ToArray()] = null;
        return existed;
    }

    /// <summary>Applies the buffered writes; called once, under the store's exclusive lock.</summary>
    internal void Apply()
    {
        _closed = true;
        foreach (var (key, value) in _writes)
        {
            if (value is null)
            {
                KvOperations.Delete(_session, key);
            }
            else
            {
                KvOperations.Upsert(_session, key, value);
            }
        }
    }

    internal void Close() => _closed = true;

    private void ThrowIfClosed() =>
        ObjectDisposedException.ThrowIf(_closed, this);

    private sealed class ByteArrayComparer : IEqualityComparer<byte[]>
    {
        public static readonly ByteArrayComparer Instance = new();

        public bool Equals(byte[]? x, byte[]? y) => x.AsSpan().SequenceEqual(y);

        public int GetHashCode(byte[] obj) => (int)System.IO.Hashing.XxHash3.HashToUInt64(obj);
    }
}
