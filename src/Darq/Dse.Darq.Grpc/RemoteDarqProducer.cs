using Dse.Darq.Grpc.V1;
using Google.Protobuf;
using Grpc.Core;
using Microsoft.Extensions.Logging;
using Microsoft.Extensions.Logging.Abstractions;

namespace Dse.Darq.Grpc;

/// <summary>
/// A producer of a remote DARQ: enqueues deduplicated by (producer id, sequence number), so a resend after a lost reply
/// is acknowledged as a duplicate instead of appended twice. Sequence numbers are assigned by this client
/// (<see cref="EnqueueAsync(ReadOnlyMemory{byte}, bool, CancellationToken)"/>) or by the caller.
/// </summary>
/// <remarks>
/// <para>The DARQ keeps the largest sequence number seen per producer, so a message overtaken by a later one would be
/// taken for a duplicate: this client sends one enqueue at a time (concurrent calls queue up). Use one producer id per
/// client instance.</para>
/// <para>A producer that restarts under the same id must continue above every sequence number it used before (pass
/// <c>nextSequenceNumber</c>); a lower one is acknowledged as a duplicate and not appended.</para>
/// <para>A DARQ with <see cref="DarqOptions.ContiguousProducerSequences"/> refuses a number that skips some with
/// <see cref="DarqSequenceGapException"/> (enqueues that never arrived, or that a rollback voided before they were
/// recoverable). The client's next number then becomes the expected one, so enqueuing the lost messages again, in order,
/// client-numbered, fills the gap; the refused message goes after them.</para>
/// </remarks>
public sealed class RemoteDarqProducer
{
    private readonly DarqService.DarqServiceClient _client;
    private readonly ILogger _logger;

    /// <summary>One enqueue at a time, in sequence-number order; guards <see cref="_nextSequenceNumber"/>.</summary>
    private readonly SemaphoreSlim _sending = new(1, 1);
    private long _nextSequenceNumber;

    /// <summary>Creates a producer over a channel to the server hosting the DARQ.</summary>
    /// <param name="channel">The channel (for example a <c>GrpcChannel</c>); the caller owns it.</param>
    /// <param name="darq">The DARQ's name on that server.</param>
    /// <param name="producerId">The producer's globally unique id.</param>
    /// <param name="nextSequenceNumber">The sequence number of the next client-numbered enqueue (nonnegative).</param>
    /// <param name="loggerFactory">Logs resends; <see langword="null"/> for none.</param>
    public RemoteDarqProducer(ChannelBase channel, string darq, long producerId, long nextSequenceNumber = 0, ILoggerFactory? loggerFactory = null)
        : this((channel ?? throw new ArgumentNullException(nameof(channel))).CreateCallInvoker(), darq, producerId, nextSequenceNumber, loggerFactory)
    {
    }

    /// <summary>Creates a producer over a call invoker (for example a channel with interceptors).</summary>
    /// <param name="callInvoker">The call invoker; the caller owns its channel.</param>
    /// <param name="darq">The DARQ's name on that server.</param>
    /// <param name="producerId">The producer's globally unique id.</param>
    /// <param name="nextSequenceNumber">The sequence number of the next client-numbered enqueue (nonnegative).</param>
    /// <param name="loggerFactory">Logs resends; <see langword="null"/> for none.</param>
    public RemoteDarqProducer(CallInvoker callInvoker, string darq, long producerId, long nextSequenceNumber = 0, ILoggerFactory? loggerFactory = null)
    {
        ArgumentNullException.ThrowIfNull(callInvoker);
        ArgumentException.ThrowIfNullOrEmpty(darq);
        ArgumentOutOfRangeException.ThrowIfNegative(nextSequenceNumber);
        _client = new DarqService.DarqServiceClient(callInvoker);
        Darq = darq;
        ProducerId = producerId;
        _nextSequenceNumber = nextSequenceNumber;
        _logger = loggerFactory?.CreateLogger<RemoteDarqProducer>() ?? (ILogger)NullLogger.Instance;
    }

    /// <summary>The DARQ's name.</summary>
    public string Darq { get; }

    /// <summary>The producer id the DARQ deduplicates by.</summary>
    public long ProducerId { get; }

    /// <summary>The sequence number the next client-numbered enqueue uses.</summary>
    public long NextSequenceNumber => Interlocked.Read(ref _nextSequenceNumber);

    /// <summary>How many times one enqueue is sent at most when the server is UNAVAILABLE (a resend is deduplicated). Default 5; at least 1.</summary>
    public int MaxAttempts { get; init; } = 5;

    /// <summary>The delay before the first resend; it doubles per resend. Default 50 ms.</summary>
    public TimeSpan RetryDelay { get; init; } = TimeSpan.FromMilliseconds(50);

    /// <summary>How long one attempt may take before it counts as failed and is resent. Default 30 s.</summary>
    public TimeSpan AttemptTimeout { get; init; } = TimeSpan.FromSeconds(30);

    /// <summary>Enqueues under the next sequence number of this client.</summary>
    /// <param name="payload">The payload, at most the DARQ's <see cref="DarqOptions.MaxMessageSize"/> bytes.</param>
    /// <param name="waitDurable">Return only once the message is durable (the default) rather than once appended.</param>
    /// <param name="cancellationToken">Cancels the call; the message may or may not have been appended, and its sequence number is used up.</param>
    /// <returns>The LSN (or a duplicate acknowledgement) and the address to await for durability.</returns>
    /// <exception cref="RpcException">The server refused the message (the status names why) or stayed unavailable.</exception>
    /// <exception cref="DarqSequenceGapException">The DARQ checks for gaps and expects a lower number: nothing was appended, and <see cref="NextSequenceNumber"/> is now the expected one.</exception>
    public async Task<DarqEnqueueResult> EnqueueAsync(ReadOnlyMemory<byte> payload, bool waitDurable = true, CancellationToken cancellationToken = default)
    {
        await _sending.WaitAsync(cancellationToken).ConfigureAwait(false);
        try
        {
            long sequenceNumber = _nextSequenceNumber;

            // Used up whatever happens: the attempt may have been appended, and a later message must not reuse the number.
            Interlocked.Exchange(ref _nextSequenceNumber, sequenceNumber + 1);
            return await SendAsync(sequenceNumber, payload, waitDurable, cancellationToken).ConfigureAwait(false);
        }
        finally
        {
            _sending.Release();
        }
    }

    /// <summary>Enqueues under a sequence number the caller chose; later client-numbered enqueues continue above it.</summary>
    /// <param name="sequenceNumber">The sequence number (nonnegative); one not above the largest the DARQ saw from this producer is a duplicate.</param>
    /// <param name="payload">The payload.</param>
    /// <param name="waitDurable">Return only once the message (or the original it duplicates) is durable.</param>
    /// <param name="cancellationToken">Cancels the call.</param>
    /// <returns>The LSN (or a duplicate acknowledgement) and the address to await for durability.</returns>
    /// <exception cref="RpcException">The server refused the message (the status names why) or stayed unavailable.</exception>
    /// <exception cref="DarqSequenceGapException">The DARQ checks for gaps and expects a lower number: nothing was appended, and <see cref="NextSequenceNumber"/> is now the expected one.</exception>
    public async Task<DarqEnqueueResult> EnqueueAsync(long sequenceNumber, ReadOnlyMemory<byte> payload, bool waitDurable = true,
        CancellationToken cancellationToken = default)
    {
        ArgumentOutOfRangeException.ThrowIfNegative(sequenceNumber);
        await _sending.WaitAsync(cancellationToken).ConfigureAwait(false);
        try
        {
            if (sequenceNumber >= _nextSequenceNumber)
            {
                Interlocked.Exchange(ref _nextSequenceNumber, sequenceNumber + 1);
            }

            return await SendAsync(sequenceNumber, payload, waitDurable, cancellationToken).ConfigureAwait(false);
        }
        finally
        {
            _sending.Release();
        }
    }

    private async Task<DarqEnqueueResult> SendAsync(long sequenceNumber, ReadOnlyMemory<byte> payload, bool waitDurable, CancellationToken cancellationToken)
    {
        var request = new EnqueueRequest
        {
            Darq = Darq,
            ProducerId = ProducerId,
            SequenceNumber = sequenceNumber,
            Payload = ByteString.CopyFrom(payload.Span),
            WaitDurable = waitDurable,
        };
        var delay = RetryDelay;
        for (int attempt = 1; ; attempt++)
        {
            try
            {
                var reply = await _client.EnqueueAsync(request, deadline: DateTime.UtcNow + AttemptTimeout, cancellationToken: cancellationToken)
                    .ConfigureAwait(false);
                return new DarqEnqueueResult(reply.Lsn, reply.Duplicate, reply.DurableAt);
            }
            catch (RpcException e) when (DarqRpcErrors.ToDarqException(e) is DarqSequenceGapException gap
                && gap.ProducerId == ProducerId && gap.SequenceNumber == sequenceNumber && gap.ExpectedSequenceNumber >= 0 && gap.ExpectedSequenceNumber < sequenceNumber)
            {
                // (A status whose trailers do not fit this request is passed on as the RpcException it is.)
                // Nothing was appended, and the DARQ holds no number from the expected one on: continue from there.
                Interlocked.Exchange(ref _nextSequenceNumber, gap.ExpectedSequenceNumber);
                throw gap;
            }
            catch (RpcException e) when (e.StatusCode == StatusCode.Cancelled && cancellationToken.IsCancellationRequested)
            {
                throw new OperationCanceledException($"The enqueue of sequence number {sequenceNumber} to DARQ '{Darq}' was cancelled; it may or may not have been appended.", e, cancellationToken);
            }
            catch (RpcException e) when (attempt < MaxAttempts && e.StatusCode is StatusCode.Unavailable or StatusCode.DeadlineExceeded
                && !cancellationToken.IsCancellationRequested)
            {
                // Safe to resend: the DARQ deduplicates by (producer id, sequence number).
                DarqGrpcInstrumentation.EnqueueResends.Add(1, new KeyValuePair<string, object?>("darq", Darq));
                DarqGrpcLogMessages.EnqueueRetrying(_logger, ProducerId, Darq, sequenceNumber, e.StatusCode, attempt, (long)delay.TotalMilliseconds);
                await Task.Delay(delay, cancellationToken).ConfigureAwait(false);
                delay *= 2;
            }
        }
    }
}
