using System.Diagnostics;
using Grpc.Core;

namespace Dse.Grpc;

/// <summary>
/// DSE for a handler written by hand, without <see cref="DseServerInterceptor"/>: start an action from the caller's
/// header, do the work, then end it here so the reply is released the way the interceptor would release it. The
/// action must not span an await; detach (<see cref="StateObject.Detach"/>) for that.
/// </summary>
/// <remarks>
/// The caller's header arrives in the call's metadata (<see cref="DseMetadata.HeaderKey"/>), or, for an API with a header
/// field in its messages, in the request message; the reply carries the server's header back the same way (docs/grpc.md,
/// "Carrying the header in your messages").
/// </remarks>
public static class DseManualCall
{
    /// <summary>
    /// Starts an action on <paramref name="owner"/> consuming the caller's header and returns whether the caller is
    /// speculative (sent a header); pass that to <see cref="EndActionAsync(StateObject, ServerCallContext, bool)"/>.
    /// </summary>
    /// <exception cref="RpcException">INVALID_ARGUMENT for a malformed header (bytes that do not parse, two header
    /// entries, or a header the StateObject's header rules refuse); ABORTED when the request came from
    /// rolled-back state and was discarded; UNAVAILABLE when the StateObject cannot serve.</exception>
    public static ValueTask<bool> StartActionAsync(StateObject owner, ServerCallContext context) =>
        StartActionAsync(owner, context, authentication: null);

    /// <summary>
    /// Starts an action like <see cref="StartActionAsync(StateObject, ServerCallContext)"/>, first refusing a header from
    /// a caller that <paramref name="authentication"/> does not accept (<c>null</c>: every caller may send one).
    /// </summary>
    /// <exception cref="RpcException">As <see cref="StartActionAsync(StateObject, ServerCallContext)"/>, and
    /// UNAUTHENTICATED or PERMISSION_DENIED when the caller may not send its header (nothing started).</exception>
    public static async ValueTask<bool> StartActionAsync(StateObject owner, ServerCallContext context, DseHeaderAuthentication? authentication)
    {
        ArgumentNullException.ThrowIfNull(owner);
        ArgumentNullException.ThrowIfNull(context);
        bool speculativeCaller = DseMetadata.TryGetRequestHeader(context, out var header);
        await StartCoreAsync(owner, context, header, authentication, DseRpcErrors.MalformedHeader).ConfigureAwait(false);
        return speculativeCaller;
    }

    /// <summary>
    /// Starts an action on <paramref name="owner"/> for a call whose request message has a field for the caller's DSE
    /// header (an API written with DSE in it, as DARQ's <c>Deliver</c>): the header is <paramref name="messageHeader"/>
    /// (the field's bytes, <see cref="DseHeader.ToArray"/>) when it is not empty, otherwise the call's metadata entry.
    /// Returns where it came from; pass that to <see cref="EndActionAsync(StateObject, ServerCallContext, DseHeaderCarrier, bool)"/>.
    /// </summary>
    /// <remarks>
    /// A header in the message costs a few bytes of the message; one in metadata costs an HTTP/2 header each way, which
    /// is most of what DSE adds to a short call. Accepting both lets callers with <see cref="DseClientInterceptor"/> use
    /// the same server.
    /// </remarks>
    /// <exception cref="RpcException">INVALID_ARGUMENT for a header in both places, a message header that does not
    /// parse, or any header the StateObject's header rules refuse; otherwise as
    /// <see cref="StartActionAsync(StateObject, ServerCallContext, DseHeaderAuthentication?)"/>.</exception>
    public static async ValueTask<DseHeaderCarrier> StartActionAsync(StateObject owner, ServerCallContext context, ReadOnlyMemory<byte> messageHeader, DseHeaderAuthentication? authentication)
    {
        ArgumentNullException.ThrowIfNull(owner);
        ArgumentNullException.ThrowIfNull(context);
        bool inMetadata = DseMetadata.TryGetRequestHeader(context, out var header);
        if (messageHeader.IsEmpty)
        {
            await StartCoreAsync(owner, context, header, authentication, DseRpcErrors.MalformedHeader).ConfigureAwait(false);
            return inMetadata ? DseHeaderCarrier.Metadata : DseHeaderCarrier.None;
        }

        if (inMetadata)
        {
            throw DseRpcErrors.TwoHeaders(context.Method);
        }

        if (!DseHeader.TryParse(messageHeader.Span, out header, out string error))
        {
            throw DseRpcErrors.MalformedMessageHeader(new DseHeaderFormatException(error));
        }

        await StartCoreAsync(owner, context, header, authentication, DseRpcErrors.MalformedMessageHeader).ConfigureAwait(false);
        return DseHeaderCarrier.Message;
    }

    private static async ValueTask StartCoreAsync(StateObject owner, ServerCallContext context, DseHeader header, DseHeaderAuthentication? authentication,
        Func<DseHeaderFormatException, RpcException> malformed)
    {
        authentication?.Check(header, context);
        bool started;
        try
        {
            started = await owner.StartActionAsync(header, context.CancellationToken).ConfigureAwait(false);
        }
        catch (DseHeaderFormatException ex)
        {
            // A header that parsed but that the StateObject refuses (it breaks its header rules) is bad input too.
            throw malformed(ex);
        }
        catch (Exception ex) when (ex is not OperationCanceledException)
        {
            throw DseRpcErrors.Map(ex, owner, context.Method);
        }

        if (!started)
        {
            throw DseRpcErrors.Discarded(owner, context.Method);
        }

        // The call's span (ASP.NET Core's request activity, when recorded) names the vertex the call runs in.
        DseTelemetry.TagVertex(Activity.Current, owner.Id, owner.WorldLine, owner.CurrentVersion);
    }

    /// <summary>
    /// Ends the action and releases the reply: at once with the header in the trailers for a speculative caller of a
    /// speculative StateObject, otherwise after a barrier on the action's state.
    /// </summary>
    /// <exception cref="RpcException">ABORTED: the state was rolled back while the reply waited at the barrier.</exception>
    public static ValueTask EndActionAsync(StateObject owner, ServerCallContext context, bool speculativeCaller)
    {
        ArgumentNullException.ThrowIfNull(owner);
        ArgumentNullException.ThrowIfNull(context);
        if (speculativeCaller && owner.Options.Speculative)
        {
            DseMetadata.SetHeader(context.ResponseTrailers, owner.EndAction());
            return ValueTask.CompletedTask;
        }

        return DseServerInterceptor.ReleaseReplyAsync(owner, owner.Detach(), speculativeCaller, context);
    }

    /// <summary>
    /// Ends an action started with <see cref="StartActionAsync(StateObject, ServerCallContext, ReadOnlyMemory{byte}, DseHeaderAuthentication?)"/>
    /// and releases the reply as <paramref name="carrier"/> requires. <see cref="DseHeaderCarrier.Message"/>: returns, at
    /// once, the header to put in the reply message when the StateObject is speculative; otherwise a
    /// <see cref="DseHeaderKind.None"/> header after a barrier, which tells the caller that everything the reply shows is
    /// recoverable. The other carriers: as <see cref="EndActionAsync(StateObject, ServerCallContext, bool)"/>, returning a
    /// None header.
    /// </summary>
    /// <param name="owner">The StateObject the action runs on.</param>
    /// <param name="context">The call.</param>
    /// <param name="carrier">What the start returned.</param>
    /// <param name="failed">The handler failed: the reply is an error, which has no message to carry a header in, so with
    /// <see cref="DseHeaderCarrier.Message"/> it is released after a barrier like a result to a non-speculative caller.</param>
    /// <exception cref="RpcException">ABORTED: the state was rolled back while the reply waited at the barrier.</exception>
    public static async ValueTask<DseHeader> EndActionAsync(StateObject owner, ServerCallContext context, DseHeaderCarrier carrier, bool failed = false)
    {
        ArgumentNullException.ThrowIfNull(owner);
        ArgumentNullException.ThrowIfNull(context);
        switch (carrier)
        {
            case DseHeaderCarrier.Message when !failed && owner.Options.Speculative:
                return owner.EndAction();
            case DseHeaderCarrier.Message:
                await DseServerInterceptor.ReleaseReplyAsync(owner, owner.Detach(), speculativeCaller: false, context).ConfigureAwait(false);
                return default;
            case DseHeaderCarrier.Metadata:
            case DseHeaderCarrier.None:
                await EndActionAsync(owner, context, carrier == DseHeaderCarrier.Metadata).ConfigureAwait(false);
                return default;
            default:
                throw new ArgumentOutOfRangeException(nameof(carrier), carrier, "Not a DseHeaderCarrier.");
        }
    }
}
