using System.Globalization;
using Grpc.Core;

namespace Dse.Darq.Grpc;

/// <summary>
/// The error contract of DarqService: what the server turns DARQ exceptions into, and how a client turns the statuses
/// back into the same exceptions. Refusals that carry data (stale incarnation, rejected step) put it in trailers.
/// </summary>
public static class DarqRpcErrors
{
    /// <summary>Trailer naming the kind of refusal (<see cref="StaleIncarnation"/>, <see cref="StepRejected"/>, <see cref="SequenceGap"/>, <see cref="MessageRefused"/>, <see cref="NotSpeculative"/>, <see cref="NotPending"/>) or <see cref="NotDurable"/>.</summary>
    public const string ErrorKey = "dse-darq-error";

    /// <summary>Trailer: the DARQ's name.</summary>
    public const string DarqKey = "dse-darq-name";

    /// <summary>Trailer: the incarnation a refused request carried.</summary>
    public const string IncarnationKey = "dse-darq-incarnation";

    /// <summary>Trailer: the DARQ's current incarnation when it refused a request.</summary>
    public const string CurrentIncarnationKey = "dse-darq-current-incarnation";

    /// <summary>Trailer: the consumed LSN that failed step validation.</summary>
    public const string LsnKey = "dse-darq-lsn";

    /// <summary>Trailer: why a step was refused (a <see cref="DarqStepRejection"/> name).</summary>
    public const string ReasonKey = "dse-darq-reason";

    /// <summary>Trailer: the log address to await (WaitForCommit) for an appended request that is not durable yet.</summary>
    public const string DurableAtKey = "dse-darq-durable-at";

    /// <summary>
    /// Value of <see cref="ErrorKey"/> (status ABORTED) for a <c>wait_durable</c> step or undeduplicated enqueue that was
    /// appended but could not be made durable: it must not be resent (that would append it twice); await
    /// <see cref="DurableAtKey"/> with WaitForCommit, or re-register to see what the log holds.
    /// </summary>
    public const string NotDurable = "not-durable";

    /// <summary>Trailer: the world-line a refused delivery's DSE header carried.</summary>
    public const string WorldLineKey = "dse-darq-world-line";

    /// <summary>Trailer: the refusing DARQ's world-line.</summary>
    public const string CurrentWorldLineKey = "dse-darq-current-world-line";

    /// <summary>Value of <see cref="ErrorKey"/> (status ABORTED) for a <see cref="DarqMessageRefusedException"/>.</summary>
    public const string MessageRefused = "message-refused";

    /// <summary>
    /// Value of <see cref="ErrorKey"/> (status FAILED_PRECONDITION) for a delivery with a DSE header to a DARQ that does not
    /// speculate generally: it refuses every such delivery until one side's configuration changes.
    /// </summary>
    public const string NotSpeculative = "not-speculative";

    /// <summary>
    /// Value of <see cref="ErrorKey"/> (status UNAVAILABLE) for an append-only <c>DeliverBatch</c> whose
    /// <c>expected_instance</c> is not the DARQ's instance any more: it restarted since the source's previous batch, which
    /// it may have lost; nothing was appended, and the source resends from its first unacknowledged message.
    /// </summary>
    public const string InstanceChanged = "instance-changed";

    /// <summary>
    /// Value of <see cref="ErrorKey"/> (status NOT_FOUND, with <see cref="LsnKey"/>) for a <c>DiscardOut</c> of an LSN at
    /// which no OUT message is pending: acknowledged, discarded already, rolled back, or never one.
    /// </summary>
    public const string NotPending = "not-pending";

    /// <summary>Trailer: the producer id of a refused enqueue.</summary>
    public const string ProducerIdKey = "dse-darq-producer-id";

    /// <summary>Trailer: the sequence number of a refused enqueue.</summary>
    public const string SequenceKey = "dse-darq-sequence";

    /// <summary>Trailer: the sequence number the DARQ takes from the producer next.</summary>
    public const string ExpectedSequenceKey = "dse-darq-expected-sequence";

    /// <summary>
    /// Value of <see cref="ErrorKey"/> (status FAILED_PRECONDITION, with <see cref="ProducerIdKey"/>, <see cref="SequenceKey"/>
    /// and <see cref="ExpectedSequenceKey"/>) for a <see cref="DarqSequenceGapException"/>: the enqueue skipped sequence
    /// numbers of its producer and was not appended; resend from the expected one.
    /// </summary>
    public const string SequenceGap = "sequence-gap";

    /// <summary>Value of <see cref="ErrorKey"/> for a <see cref="DarqStaleIncarnationException"/>.</summary>
    public const string StaleIncarnation = "stale-incarnation";

    /// <summary>Value of <see cref="ErrorKey"/> for a <see cref="DarqStepRejectedException"/>.</summary>
    public const string StepRejected = "step-rejected";

    /// <summary>
    /// Turns a status of DarqService back into the DARQ exception it stands for (<see cref="DarqStaleIncarnationException"/>,
    /// <see cref="DarqStepRejectedException"/>, <see cref="DarqSequenceGapException"/> or <see cref="DarqMessageRefusedException"/>, with the same details), or returns <see langword="null"/> when it stands
    /// for none (the <see cref="RpcException"/> is then the error).
    /// </summary>
    /// <param name="error">The status a call failed with.</param>
    /// <returns>The DARQ exception, or <see langword="null"/>.</returns>
    public static InvalidOperationException? ToDarqException(RpcException error)
    {
        ArgumentNullException.ThrowIfNull(error);
        if (error.StatusCode == StatusCode.Aborted)
        {
            return ToMessageRefused(error.Trailers);
        }

        if (error.StatusCode != StatusCode.FailedPrecondition)
        {
            return null;
        }

        var trailers = error.Trailers;
        string? kind = trailers.GetValue(ErrorKey);
        string darq = trailers.GetValue(DarqKey) ?? "?";
        if (kind == StaleIncarnation
            && TryLong(trailers, IncarnationKey, out long incarnation)
            && TryLong(trailers, CurrentIncarnationKey, out long current))
        {
            // The server's detail says what it refused (an old incarnation, or another instance of this one).
            return new DarqStaleIncarnationException(darq, incarnation, current, error.Status.Detail);
        }

        if (kind == StepRejected
            && TryLong(trailers, LsnKey, out long lsn)
            && Enum.TryParse(trailers.GetValue(ReasonKey), ignoreCase: false, out DarqStepRejection reason)
            && Enum.IsDefined(reason))
        {
            return new DarqStepRejectedException(darq, lsn, reason);
        }

        if (kind == SequenceGap
            && TryLong(trailers, ProducerIdKey, out long producer)
            && TryLong(trailers, SequenceKey, out long sequence)
            && TryLong(trailers, ExpectedSequenceKey, out long expected))
        {
            return new DarqSequenceGapException(darq, producer, sequence, expected);
        }

        return null;
    }

    /// <summary>
    /// The status for an exception of a DARQ operation, or <see langword="null"/> for one that should pass through as is
    /// (cancellation, an <see cref="RpcException"/>, an unexpected error).
    /// </summary>
    internal static RpcException? ToRpcException(Exception error, string method, string darq) => error switch
    {
        RpcException or OperationCanceledException => null,
        DarqStaleIncarnationException stale => new RpcException(
            new Status(StatusCode.FailedPrecondition, $"{method}: {stale.Message}"),
            new Metadata
            {
                { ErrorKey, StaleIncarnation },
                { DarqKey, darq },
                { IncarnationKey, stale.Incarnation.ToString(CultureInfo.InvariantCulture) },
                { CurrentIncarnationKey, stale.CurrentIncarnation.ToString(CultureInfo.InvariantCulture) },
            }),
        DarqStepRejectedException rejected => new RpcException(
            new Status(StatusCode.FailedPrecondition, $"{method}: {rejected.Message}"),
            new Metadata
            {
                { ErrorKey, StepRejected },
                { DarqKey, darq },
                { LsnKey, rejected.Lsn.ToString(CultureInfo.InvariantCulture) },
                { ReasonKey, rejected.Reason.ToString() },
            }),
        DarqSequenceGapException gap => new RpcException(
            new Status(StatusCode.FailedPrecondition, $"{method}: {gap.Message}"),
            new Metadata
            {
                { ErrorKey, SequenceGap },
                { DarqKey, darq },
                { ProducerIdKey, gap.ProducerId.ToString(CultureInfo.InvariantCulture) },
                { SequenceKey, gap.SequenceNumber.ToString(CultureInfo.InvariantCulture) },
                { ExpectedSequenceKey, gap.ExpectedSequenceNumber.ToString(CultureInfo.InvariantCulture) },
            }),
        DarqMessageRefusedException refused => new RpcException(
            new Status(StatusCode.Aborted, $"{method}: {refused.Message}"),
            new Metadata
            {
                { ErrorKey, MessageRefused },
                { DarqKey, darq },
                { WorldLineKey, refused.MessageWorldLine.ToString(CultureInfo.InvariantCulture) },
                { CurrentWorldLineKey, refused.WorldLine.ToString(CultureInfo.InvariantCulture) },
            }),
        DseFaultedException faulted => Unavailable(method, $"DARQ '{darq}' cannot speculate now: {faulted.Message}"),
        DseRolledBackException rolledBack => Unavailable(method, $"DARQ '{darq}' rolled the request's entries back before they became recoverable (resend): {rolledBack.Message}"),
        DseHeaderFormatException format => new RpcException(new Status(StatusCode.InvalidArgument, $"{method}: dse_header is malformed: {format.Message}")),
        ObjectDisposedException => Unavailable(method, $"DARQ '{darq}' is closed."),
        ArgumentException argument => new RpcException(new Status(StatusCode.InvalidArgument, $"{method}: {argument.Message}")),
        IOException io => Unavailable(method, $"DARQ '{darq}' cannot commit: {io.Message}"),
        InvalidOperationException invalid => new RpcException(new Status(StatusCode.FailedPrecondition, $"{method}: {invalid.Message}")),
        _ => null,
    };

    /// <summary>
    /// ABORTED for a request that was appended (at <paramref name="lsn"/>) but whose durability wait failed with
    /// <paramref name="error"/>: unlike UNAVAILABLE, it says "do not resend".
    /// </summary>
    internal static RpcException AppendedNotDurable(string method, string darq, string what, long lsn, long durableAt, Exception error) => new(
        new Status(StatusCode.Aborted,
            $"{method}: the {what} was appended to DARQ '{darq}' (LSN {lsn}) but could not be made durable ({error.Message}); do not resend it, " +
            $"that would append it again: await WaitForCommit of address {durableAt}, or register again to see what the log holds."),
        new Metadata
        {
            { ErrorKey, NotDurable },
            { DarqKey, darq },
            { LsnKey, lsn.ToString(CultureInfo.InvariantCulture) },
            { DurableAtKey, durableAt.ToString(CultureInfo.InvariantCulture) },
        });

    /// <summary>NOT_FOUND for a DARQ name the server does not host.</summary>
    internal static RpcException UnknownDarq(string method, string darq) =>
        new(new Status(StatusCode.NotFound, $"{method}: this server hosts no DARQ named '{darq}'."));

    /// <summary>NOT_FOUND with <see cref="ErrorKey"/> <see cref="NotPending"/>: no OUT message is pending at <paramref name="lsn"/>.</summary>
    internal static RpcException NotPendingOut(string method, string darq, long lsn) => new(
        new Status(StatusCode.NotFound,
            $"{method}: DARQ '{darq}' has no pending OUT message at LSN {lsn} (acknowledged, discarded already, rolled back, or never an OUT message); nothing was discarded."),
        new Metadata
        {
            { ErrorKey, NotPending },
            { DarqKey, darq },
            { LsnKey, lsn.ToString(CultureInfo.InvariantCulture) },
        });

    /// <summary>UNIMPLEMENTED for an operator call to a server that has them disabled.</summary>
    internal static RpcException OperatorCallsDisabled(string method) => new(new Status(StatusCode.Unimplemented,
        $"{method}: operator calls are disabled on this server; the hosting application enables them with DarqGrpcServiceOptions.EnableOperatorCalls."));

    /// <summary>PERMISSION_DENIED: the application's check refused the caller.</summary>
    internal static RpcException PermissionDenied(string method, string message) =>
        new(new Status(StatusCode.PermissionDenied, $"{method}: {message}"));

    /// <summary>INVALID_ARGUMENT naming the field and what was wrong with it.</summary>
    internal static RpcException InvalidArgument(string method, string message) =>
        new(new Status(StatusCode.InvalidArgument, $"{method}: {message}"));

    /// <summary>FAILED_PRECONDITION without trailers: the DARQ's state or configuration refuses the request.</summary>
    internal static RpcException FailedPrecondition(string method, string message) =>
        new(new Status(StatusCode.FailedPrecondition, $"{method}: {message}"));

    /// <summary>FAILED_PRECONDITION with <see cref="ErrorKey"/> <paramref name="kind"/>.</summary>
    internal static RpcException FailedPrecondition(string method, string darq, string kind, string message) =>
        new(new Status(StatusCode.FailedPrecondition, $"{method}: {message}"), new Metadata { { ErrorKey, kind }, { DarqKey, darq } });

    /// <summary>
    /// Whether a failed <c>Deliver</c> call means the destination refuses the message for good: the server hosts no such
    /// DARQ (NOT_FOUND), the message is invalid there (INVALID_ARGUMENT: larger than it takes, say), the server has no
    /// DarqService (UNIMPLEMENTED), or the destination cannot take the way it was sent (<see cref="NotSpeculative"/>).
    /// Everything else (UNAVAILABLE, a deadline, a world-line refusal) is transient.
    /// </summary>
    internal static bool IsDeliveryRefusedForGood(RpcException error) => error.StatusCode switch
    {
        StatusCode.NotFound or StatusCode.InvalidArgument or StatusCode.Unimplemented => true,
        StatusCode.FailedPrecondition => error.Trailers.GetValue(ErrorKey) == NotSpeculative,
        _ => false,
    };

    /// <summary>
    /// FAILED_PRECONDITION (<see cref="StaleIncarnation"/>, so a client rethrows <see cref="DarqStaleIncarnationException"/>):
    /// a WaitForCommit names an instance the DARQ is not any more; the message says which was sent and which is current.
    /// </summary>
    internal static RpcException InstanceGone(string method, string darq, long address, long instance, long currentInstance, long incarnation, long currentIncarnation)
    {
        string next = incarnation != 0
            ? $"processor incarnation {incarnation} must register again (the DARQ's current incarnation is {currentIncarnation}) and see in the replay what the log holds."
            : "resend from the first message not acknowledged.";
        return new RpcException(
            new Status(StatusCode.FailedPrecondition,
                $"{method}: address {address} came from instance {instance} of DARQ '{darq}', which is instance {currentInstance} now: it was reopened since, and " +
                $"the address may be of a step or batch the restart lost, so its commit is not acknowledged; {next}"),
            new Metadata
            {
                { ErrorKey, StaleIncarnation },
                { DarqKey, darq },
                { IncarnationKey, incarnation.ToString(CultureInfo.InvariantCulture) },
                { CurrentIncarnationKey, currentIncarnation.ToString(CultureInfo.InvariantCulture) },
            });
    }

    /// <summary>UNAVAILABLE (<see cref="InstanceChanged"/>): the DARQ restarted since the source's previous append-only batch.</summary>
    internal static RpcException InstanceChangedSince(string method, string darq, long expected) => new(
        new Status(StatusCode.Unavailable,
            $"{method}: DARQ '{darq}' restarted since the previous batch of this source was appended (instance {expected}); that batch may be lost, so " +
            "nothing was appended: resend from the first unacknowledged message."),
        new Metadata { { ErrorKey, InstanceChanged }, { DarqKey, darq } });

    /// <summary>UNAVAILABLE: the DARQ or the server cannot serve now; retry.</summary>
    internal static RpcException Unavailable(string method, string message) =>
        new(new Status(StatusCode.Unavailable, $"{method}: {message}"));

    private static DarqMessageRefusedException? ToMessageRefused(Metadata trailers) =>
        trailers.GetValue(ErrorKey) == MessageRefused
        && TryLong(trailers, WorldLineKey, out long worldLine)
        && TryLong(trailers, CurrentWorldLineKey, out long current)
            ? new DarqMessageRefusedException(trailers.GetValue(DarqKey) ?? "?", worldLine, current)
            : null;

    private static bool TryLong(Metadata trailers, string key, out long value) =>
        long.TryParse(trailers.GetValue(key), NumberStyles.Integer, CultureInfo.InvariantCulture, out value);
}
