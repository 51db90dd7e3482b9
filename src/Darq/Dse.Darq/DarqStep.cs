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

    /// <summary>Indexes into <see cref="_self"/> of the SELF messages that are activities; null while there is none.</summary>
    private List<int>? _activities;

    /// <summary>The log sequence numbers of the IN and SELF messages the step consumes.</summary>
    public IReadOnlyList<long> Consumed => _consumed;

    /// <summary>The SELF messages the step appends, in order.</summary>
    public IReadOnlyList<ReadOnlyMemory<byte>> SelfMessages => _self;

    /// <summary>The OUT messages the step appends, in order.</summary>
    public IReadOnlyList<DarqOutMessage> OutMessages => _out;

    /// <summary>Whether the step neither consumes nor produces anything.</summary>
    public bool IsEmpty => _consumed.Count == 0 && _self.Count == 0 && _out.Count == 0;

    /// <summary>The LSN the step consumes when it consumes one message and produces nothing (the DARQ's fast path), else -1.</summary>
    internal long OnlyConsumed => _consumed.Count == 1 && _self.Count == 0 && _out.Count == 0 ? _consumed[0] : -1;

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
        // Activities are marked by SELF index: a mark left over would make the next step's SELF message there an activity.
        _activities = null;
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

    /// <summary>
    /// Adds an activity: a SELF message marked as an activity, describing work on an external service (see
    /// <see cref="DarqActivityRunner"/>). It takes its place among the SELF messages, so its LSN is in
    /// <see cref="DarqStepResult.SelfLsns"/> at the position it was added.
    /// </summary>
    /// <param name="name">The activity's name, the key of its handler (1 to 256 UTF-8 bytes).</param>
    /// <param name="input">The activity's input (copied now).</param>
    /// <returns>This step.</returns>
    /// <exception cref="ArgumentException">The name is empty or longer than 256 UTF-8 bytes.</exception>
    public DarqStep AddActivity(string name, ReadOnlyMemory<byte> input)
    {
        var envelope = DarqActivity.Encode(name, input.Span);
        (_activities ??= []).Add(_self.Count);
        _self.Add(envelope);
        return this;
    }

    /// <summary>Whether the SELF message at <paramref name="index"/> is an activity.</summary>
    internal bool IsActivity(int index) => _activities is not null && _activities.Contains(index);

    /// <summary>Whether the step records any activity.</summary>
    internal bool HasActivities => _activities is not null;

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
