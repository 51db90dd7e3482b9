namespace Dse.Coordinator;

/// <summary>
/// The coordinator's durable log of cluster changes (membership, failures, rollback decisions). Records are opaque
/// bytes that the coordinator defines; the log keeps them in append order, makes each one durable before
/// <see cref="AppendAsync"/> returns, and fences coordinator incarnations so that two of them never both append.
/// </summary>
/// <remarks>
/// <para>Life cycle: construct, <see cref="OpenAsync"/> once (recovery and fencing), then any number of
/// <see cref="AppendAsync"/> calls, then <see cref="IAsyncDisposable.DisposeAsync"/>. Concurrent appends are
/// serialized; a caller that needs an order between two records awaits the first append before starting the second.</para>
/// <para>Fencing: after an incarnation's <see cref="OpenAsync"/> returns, no older incarnation can append any more.
/// Depending on the implementation the newcomer either takes over (the older instance's next append throws
/// <see cref="CoordinatorLogFencedException"/>) or is refused while the older one is alive (its
/// <see cref="OpenAsync"/> throws <see cref="CoordinatorLogFencedException"/>).</para>
/// <para>An append that throws anything other than <see cref="CoordinatorLogFencedException"/>,
/// <see cref="ArgumentException"/> or <see cref="ObjectDisposedException"/> has an unknown outcome: the record may or
/// may not be recovered by the next <see cref="OpenAsync"/>. The instance is then faulted; every later append throws
/// <see cref="InvalidOperationException"/> and the coordinator must dispose it and open a new instance.</para>
/// </remarks>
public interface ICoordinatorLog : IAsyncDisposable
{
    /// <summary>
    /// The largest record, in bytes: 4 MiB minus the 16-byte frame header, so that a framed record always fits one
    /// append block of an Azure append blob.
    /// </summary>
    public const int MaxRecordLength = (4 * 1024 * 1024) - 16;

    /// <summary>What the log is stored in (a path, a blob name), for log messages; never contains credentials.</summary>
    string Description { get; }

    /// <summary>How many appends this instance made durable; opening and recovery do not count.</summary>
    long DurableAppends { get; }

    /// <summary>
    /// Fences out any previous incarnation and recovers every valid record in append order. Call it once, before
    /// any append.
    /// </summary>
    /// <param name="cancellationToken">Cancels the open; the instance cannot be opened again afterwards.</param>
    /// <returns>The recovered records, oldest first.</returns>
    /// <exception cref="CoordinatorLogFencedException">Another incarnation holds the log and cannot be fenced out.</exception>
    /// <exception cref="InvalidDataException">The log is corrupt somewhere other than a torn tail.</exception>
    Task<IReadOnlyList<ReadOnlyMemory<byte>>> OpenAsync(CancellationToken cancellationToken = default);

    /// <summary>Appends one record and returns once it is durable.</summary>
    /// <param name="record">The record's bytes, at most <see cref="MaxRecordLength"/>; the log copies them.</param>
    /// <param name="cancellationToken">Cancels waiting for an earlier append; once the write starts it runs to its end.</param>
    /// <exception cref="ArgumentException"><paramref name="record"/> is longer than <see cref="MaxRecordLength"/>.</exception>
    /// <exception cref="CoordinatorLogFencedException">
    /// A newer incarnation took over; nothing was appended, and every later append throws it too.
    /// </exception>
    /// <exception cref="InvalidOperationException">The log was not opened, or an earlier append faulted it.</exception>
    Task AppendAsync(ReadOnlyMemory<byte> record, CancellationToken cancellationToken = default);
}
