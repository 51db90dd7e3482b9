namespace Dse.Darq;

/// <summary>
/// A checkpoint's snapshot function: turns the unconsumed plain SELF messages (in LSN order; activities excluded) into
/// the SELF messages that replace them, typically the processor's state as one message.
/// </summary>
/// <param name="selfMessages">The SELF messages the checkpoint replaces, in LSN order (never empty).</param>
/// <returns>The replacing SELF payloads, in order (copied); may be empty.</returns>
/// <remarks>
/// It runs synchronously under the DARQ's gate, so no step interleaves with it; it must be quick and must not wait on
/// the DARQ. If it throws, the checkpoint is abandoned and nothing changes.
/// </remarks>
public delegate IReadOnlyList<ReadOnlyMemory<byte>> DarqSnapshot(IReadOnlyList<DarqMessage> selfMessages);
