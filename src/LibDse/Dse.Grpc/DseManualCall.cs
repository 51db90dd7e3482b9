using System.Diagnostics;
using Grpc.Core;

namespace Dse.Grpc;

/// <summary>
/// DSE for a handler written by hand, without <see cref="DseServerInterceptor"/>: start an action from the caller's
/// header, do the work, then end it here so the reply is released the way the interceptor would release it. The
/// action must not span an await; detach (<see cref="StateObject.Detach"/>) for that.
/// </summary>
public static class DseManualCall
{
    /// <summary>
    /// Starts an action on <paramref name="owner"/> consuming the caller's header and returns whether the caller is
    /// speculative (sent a header); pass that to <see cref="EndActionAsync"/>.
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
        authentication?.Check(header, context);
        bool started;
        try
        {
            started = await owner.StartActionAsync(header, context.CancellationToken).ConfigureAwait(false);
        }
        catch (DseHeaderFormatException ex)
        {
            // A header that parsed but that the StateObject refuses (it breaks its header rules) is bad input too.
            throw DseRpcErrors.MalformedHeader(ex);
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
        return speculativeCaller;
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
}
