namespace Dse.Darq;

/// <summary>
/// A batch of OUT messages a destination appended (<see cref="IDarqDestination.SendBatchAsync"/>), and the wait that
/// acknowledges it once it is durable there. The default value is a batch durable already.
/// </summary>
public readonly struct DarqSentBatch : IEquatable<DarqSentBatch>
{
    private readonly Func<CancellationToken, ValueTask>? _waitDurable;

    /// <summary>A batch appended but not yet known to be durable.</summary>
    /// <param name="waitDurable">
    /// Completes once the batch (and every batch appended before it) is durable at the destination; fails when it may
    /// never be (the destination lost it: it restarted, or its commits fail), which leaves the messages pending at the source.
    /// </param>
    public DarqSentBatch(Func<CancellationToken, ValueTask> waitDurable)
    {
        ArgumentNullException.ThrowIfNull(waitDurable);
        _waitDurable = waitDurable;
    }

    /// <summary>A batch durable at the destination already (its acknowledgement needs no wait).</summary>
    public static DarqSentBatch Durable => default;

    /// <summary>Whether the batch is known to be durable already.</summary>
    public bool IsDurable => _waitDurable is null;

    /// <summary>Waits until the batch is durable at the destination.</summary>
    /// <param name="cancellationToken">Cancels waiting; the batch stays unacknowledged (and is resent).</param>
    public ValueTask WaitDurableAsync(CancellationToken cancellationToken) => _waitDurable?.Invoke(cancellationToken) ?? ValueTask.CompletedTask;

    /// <inheritdoc />
    public bool Equals(DarqSentBatch other) => ReferenceEquals(_waitDurable, other._waitDurable);

    /// <inheritdoc />
    public override bool Equals(object? obj) => obj is DarqSentBatch other && Equals(other);

    /// <inheritdoc />
    public override int GetHashCode() => _waitDurable?.GetHashCode() ?? 0;

    /// <summary>Whether two values wait the same way.</summary>
    public static bool operator ==(DarqSentBatch left, DarqSentBatch right) => left.Equals(right);

    /// <summary>Whether two values wait differently.</summary>
    public static bool operator !=(DarqSentBatch left, DarqSentBatch right) => !left.Equals(right);
}
