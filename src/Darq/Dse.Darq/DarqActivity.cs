using System.Buffers.Binary;
using System.Globalization;
using System.Text;

namespace Dse.Darq;

/// <summary>
/// An activity: work on an external service that a step recorded as a SELF message marked as an activity (SELF flag
/// bit 0; its payload is the envelope name length (2), name (UTF-8), input). It stays unconsumed, and is replayed after
/// every restart, until a later step consumes it.
/// </summary>
/// <param name="Lsn">The activity message's LSN; a completion step consumes it.</param>
/// <param name="Name">The activity's name, the key of its handler.</param>
/// <param name="Input">The activity's input.</param>
/// <param name="IdempotencyToken">
/// <c>"{darq name}:{LSN}"</c>: the same on every run of this activity (retries, restarts) and different for every other
/// activity of the DARQ, so an external service that deduplicates by it performs the activity once.
/// </param>
public sealed record DarqActivity(long Lsn, string Name, ReadOnlyMemory<byte> Input, string IdempotencyToken)
{
    /// <summary>Reads an activity from a streamed message of kind <see cref="DarqMessageKind.Activity"/>.</summary>
    /// <param name="message">The message.</param>
    /// <param name="darqName">The name of the DARQ that holds it (part of the idempotency token).</param>
    /// <returns>The activity.</returns>
    /// <exception cref="ArgumentException">The message is not an activity, or its envelope is malformed.</exception>
    public static DarqActivity FromMessage(DarqMessage message, string darqName)
    {
        ArgumentException.ThrowIfNullOrEmpty(darqName);
        if (message.Kind != DarqMessageKind.Activity)
        {
            throw new ArgumentException($"The message at LSN {message.Lsn} is a {message.Kind} message, not an activity.", nameof(message));
        }

        var payload = message.Payload.Span;
        int nameLength = payload.Length >= 2 ? BinaryPrimitives.ReadUInt16LittleEndian(payload) : -1;
        if (nameLength is < 1 or > DarqEntryFormat.MaxDestinationBytes || payload.Length < 2 + nameLength)
        {
            throw new ArgumentException($"The activity at LSN {message.Lsn} has a malformed envelope ({payload.Length} bytes).", nameof(message));
        }

        string name = Encoding.UTF8.GetString(payload.Slice(2, nameLength));
        return new DarqActivity(message.Lsn, name, message.Payload[(2 + nameLength)..], Token(darqName, message.Lsn));
    }

    /// <summary>The idempotency token of the activity at <paramref name="lsn"/> in DARQ <paramref name="darqName"/>.</summary>
    internal static string Token(string darqName, long lsn) => string.Create(CultureInfo.InvariantCulture, $"{darqName}:{lsn}");

    /// <summary>Reads the name of an activity envelope (it was written by <see cref="Encode"/>).</summary>
    internal static string NameOf(ReadOnlySpan<byte> envelope)
        => Encoding.UTF8.GetString(envelope.Slice(2, BinaryPrimitives.ReadUInt16LittleEndian(envelope)));

    /// <summary>The envelope: name length (2), name (UTF-8), input.</summary>
    internal static byte[] Encode(string name, ReadOnlySpan<byte> input)
    {
        ArgumentException.ThrowIfNullOrEmpty(name);
        int nameLength = Encoding.UTF8.GetByteCount(name);
        if (nameLength > DarqEntryFormat.MaxDestinationBytes)
        {
            throw new ArgumentException($"The activity name '{name}' has {nameLength} UTF-8 bytes; the limit is {DarqEntryFormat.MaxDestinationBytes}.", nameof(name));
        }

        var envelope = new byte[2 + nameLength + input.Length];
        BinaryPrimitives.WriteUInt16LittleEndian(envelope, (ushort)nameLength);
        Encoding.UTF8.GetBytes(name, envelope.AsSpan(2));
        input.CopyTo(envelope.AsSpan(2 + nameLength));
        return envelope;
    }
}
