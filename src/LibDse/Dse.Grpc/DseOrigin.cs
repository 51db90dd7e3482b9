using Grpc.Core;
using Grpc.Core.Interceptors;

namespace Dse.Grpc;

/// <summary>The DSE state an outgoing call carries, captured when the call starts, and where its reply's header goes.</summary>
internal readonly record struct DseOrigin(DseOriginKind Kind, DseHeader Header, DseCallScope? Scope, Sthread? Sthread, bool WaitsForCommit)
{
    /// <summary>What the current flow sends: the running segment's vertex, the bound sthread's header, or nothing.</summary>
    /// <exception cref="RpcException">ABORTED: the bound sthread was rolled back; nothing is sent.</exception>
    public static DseOrigin Capture(string method)
    {
        if (DseCallScope.CurrentSegment is { } scope)
        {
            // Inside the action the version cannot move, so the vertex is exact.
            var owner = scope.Owner;
            var header = DseHeader.FromOrigin(owner.Id, owner.WorldLine, owner.CurrentVersion);
            return new DseOrigin(DseOriginKind.Segment, header, scope, null, !owner.Options.Speculative);
        }

        if (DseCall.Current is { } sthread)
        {
            DseHeader header;
            try
            {
                header = DseCall.Send(sthread);
            }
            catch (DseRolledBackException ex)
            {
                throw DseRpcErrors.RolledBack(ex.WorldLine, $"{method} was not sent: the caller's sthread was rolled back ({ex.Message}).");
            }

            return new DseOrigin(DseOriginKind.Sthread, header, null, sthread, !sthread.Owner.Options.Speculative);
        }

        return default;
    }

    /// <summary>
    /// The call's context with the header, and the caller's credential (<paramref name="authorization"/>, unless the
    /// metadata hold one already), added to a copy of its metadata (the caller's may be reused).
    /// </summary>
    public ClientInterceptorContext<TRequest, TResponse> AddTo<TRequest, TResponse>(ClientInterceptorContext<TRequest, TResponse> context, string? authorization)
        where TRequest : class
        where TResponse : class
    {
        if (Kind == DseOriginKind.None)
        {
            return context;
        }

        var headers = new Metadata();
        if (context.Options.Headers is { } existing)
        {
            foreach (var entry in existing)
            {
                headers.Add(entry);
                if (string.Equals(entry.Key, DseCredentials.AuthorizationKey, StringComparison.Ordinal))
                {
                    authorization = null;   // the caller's own credential wins
                }
            }
        }

        DseMetadata.SetHeader(headers, Header);
        if (authorization is not null)
        {
            headers.Add(DseCredentials.AuthorizationKey, authorization);
        }
        return new ClientInterceptorContext<TRequest, TResponse>(context.Method, context.Host, context.Options.WithHeaders(headers));
    }

    /// <summary>
    /// Waits until the state the call carries is recoverable (a non-speculative sender sends nothing before that).
    /// </summary>
    /// <exception cref="RpcException">ABORTED: the state was rolled back; the call was never sent.</exception>
    public async Task WaitForCommitAsync(string method, CancellationToken cancellationToken)
    {
        try
        {
            if (Kind == DseOriginKind.Segment)
            {
                var origin = Header.Origin;
                await Scope!.Owner.WaitForCommitAsync(origin.Version, origin.WorldLine, cancellationToken).ConfigureAwait(false);
            }
            else
            {
                await DseCall.BarrierAsync(Sthread!, cancellationToken).ConfigureAwait(false);
            }
        }
        catch (DseRolledBackException ex)
        {
            throw DseRpcErrors.RolledBack(ex.WorldLine, $"{method} was not sent: the state it would carry was rolled back by a failure ({ex.Message}).");
        }
    }

    /// <summary>
    /// Receives a reply's header (from its trailers) into the flow's state, before the caller sees the reply. Returns
    /// <c>false</c> when the reply carries none (a server without DSE, or a reply released after a barrier).
    /// </summary>
    /// <exception cref="RpcException">ABORTED: the reply came from rolled-back state, or the caller was rolled back;
    /// INTERNAL: the header is malformed.</exception>
    public async ValueTask<bool> ReceiveAsync(Metadata trailers, string method)
    {
        DseHeader header;
        try
        {
            if (!DseMetadata.TryGetHeader(trailers, out header))
            {
                return false;   // nothing speculative came back
            }
        }
        catch (DseHeaderFormatException ex)
        {
            throw new RpcException(new Status(StatusCode.Internal, $"{method} replied with a malformed DSE header: {ex.Message}"));
        }

        bool kept;
        try
        {
            kept = Kind == DseOriginKind.Segment
                ? await Scope!.ReceiveAsync(header).ConfigureAwait(false)
                : await DseCall.ReceiveAsync(Sthread!, header).ConfigureAwait(false);
        }
        catch (DseRolledBackException ex)
        {
            throw DseRpcErrors.RolledBack(ex.WorldLine, $"The caller of {method} was rolled back while the call ran: {ex.Message}");
        }

        if (!kept)
        {
            throw DseRpcErrors.ReplyDiscarded(header.WorldLine, method);
        }

        return true;
    }
}
