using FASTER.core;

namespace Dse.Services;

/// <summary>Single-key FasterKV operations on a session, pinning keys and values as SpanBytes.</summary>
internal static class KvOperations
{
    /// <summary>Reads a value; null when absent. Waits for the I/O if the record was evicted to disk.</summary>
    public static unsafe byte[]? Read(ClientSession<SpanByte, SpanByte, SpanByte, byte[], Empty, SpanByteFunctions_ByteArrayOutput<Empty>> session, ReadOnlySpan<byte> key)
    {
        fixed (byte* k = key)
        {
            var spanKey = SpanByte.FromPointer(k, key.Length);
            byte[] output = null!;
            var status = session.Read(ref spanKey, ref output);
            if (status.IsPending)
            {
                session.CompletePendingWithOutputs(out var outputs, wait: true);
                using (outputs)
                {
                    while (outputs.Next())
                    {
                        status = outputs.Current.Status;
                        output = outputs.Current.Output;
                    }
                }
            }

            return status.Found ? output : null;
        }
    }

    public static unsafe void Upsert(ClientSession<SpanByte, SpanByte, SpanByte, byte[], Empty, SpanByteFunctions_ByteArrayOutput<Empty>> session, ReadOnlySpan<byte> key, ReadOnlySpan<byte> value)
    {
        fixed (byte* k = key)
        fixed (byte* v = value)
        {
            var spanKey = SpanByte.FromPointer(k, key.Length);
            var spanValue = SpanByte.FromPointer(v, value.Length);
            var status = session.Upsert(ref spanKey, ref spanValue);
            if (status.IsPending)
            {
                session.CompletePending(wait: true);
            }
        }
    }

    public static unsafe void Delete(ClientSession<SpanByte, SpanByte, SpanByte, byte[], Empty, SpanByteFunctions_ByteArrayOutput<Empty>> session, ReadOnlySpan<byte> key)
    {
        fixed (byte* k = key)
        {
            var spanKey = SpanByte.FromPointer(k, key.Length);
            var status = session.Delete(ref spanKey);
            if (status.IsPending)
            {
                session.CompletePending(wait: true);
            }
        }
    }
}
