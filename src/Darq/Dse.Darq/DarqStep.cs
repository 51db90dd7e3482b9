namespace Dse.Darq;

/// <summary>
/// A CReSt step under construction: the messages it consumes, the SELF messages it leaves for its future self and the
/// OUT messages it sends. The DARQ validates and appends it as one unit (see <see cref="Darq.StepAsync"/>).
/// </summary>
public sealed class DarqStep
{
    private readonly List<long> _consumed = [];
    private readonly List<ReadOnlyMemory<byte>> _self = [];
    private readonly List<DarqOutMessage> _out = [];

    /// <summary>The log sequence numbers of the IN and SELF messages the step consumes.</summary>
    public IReadOnlyList<long> Consumed => _consumed;

    /// <summary>The SELF messages the step appends, in order.</summary>
    public IReadOnlyList<ReadOnlyMemory<byte>> SelfMessages => _self;

    /// <summary>The OUT messages the step appends, in order.</summary>
    public IReadOnlyList<DarqOutMessage> OutMessages => _out;

    /// <summary>Whether the step neither consumes nor produces anything.</summary>
    public bool IsEmpty => _consumed.Count == 0 && _self.Count == 0 && _out.Count == 0;

    /// <summary>
    /// Empties the step so that it can describe the next one: a processor may reuse one <see cref="DarqStep"/> for every
    /// step, once the previous step's task has completed (the DARQ copies what it appends and reads the step no more).
    /// </summary>
    /// <returns>This step.</returns>
    public DarqStep Clear()
    {
        _consumed.Clear();
        _self.Clear();
        _out.Clear();
        return this;
    }

    /// <summary>Adds a message to consume, by log sequence number.</summary>
    /// <param name="lsn">The message's LSN, as streamed to the processor.</param>
    /// <returns>This step.</returns>
    public DarqStep Consume(long lsn)
    {
        _consumed.Add(lsn);
        return this;
    }

    /// <summary>Adds a streamed message to consume.</summary>
    /// <param name="message">The message.</param>
    /// <returns>This step.</returns>
    public DarqStep Consume(DarqMessage message)
    {
        ArgumentNullException.ThrowIfNull(message);
        return Consume(message.Lsn);
    }

    /// <summary>Adds a SELF message (the payload is copied when the step is appended).</summary>
    /// <param name="payload">The payload.</param>
    /// <returns>This step.</returns>
    public DarqStep AddSelf(ReadOnlyMemory<byte> payload)
    {
        _self.Add(payload);
        return this;
    }

    /// <summary>Adds an OUT message to another DARQ (the payload is copied when the step is appended).</summary>
    /// <param name="destination">The destination DARQ's name.</param>
    /// <param name="payload">The payload.</param>
    /// <returns>This step.</returns>
    public DarqStep AddOut(string destination, ReadOnlyMemory<byte> payload)
    {
        ArgumentException.ThrowIfNullOrEmpty(destination);
        _out.Add(new DarqOutMessage(destination, payload));
        return this;
    }
}
