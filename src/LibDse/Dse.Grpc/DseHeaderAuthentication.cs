using Grpc.Core;
using Microsoft.Extensions.Logging;
using Microsoft.Extensions.Logging.Abstractions;

namespace Dse.Grpc;

/// <summary>
/// Who may send a DSE header to a speculative service: only callers that authenticate as participants of a
/// participants file (<see cref="DseCredentials"/>). A header is another participant's state entering this StateObject,
/// so a caller that cannot prove it is a participant could otherwise make it depend on versions it invents.
/// </summary>
/// <remarks>
/// <para>The check runs after the header parsed and before the StateObject starts an action, so a refused call never
/// runs its handler and changes nothing. A request without a header (a non-speculative caller) is not checked.</para>
/// <list type="bullet">
/// <item>No credential, a credential that is not a bearer token, or a token the file does not list:
/// UNAUTHENTICATED. With <see cref="AcceptUnauthenticatedHeaders"/>, a call that carries no <c>authorization</c> entry
/// at all is accepted; a credential that is sent is still checked.</item>
/// <item>An operator's token, or an origin header (<see cref="DseHeaderKind.Origin"/>) naming a participant the token
/// does not speak for: PERMISSION_DENIED. A dependency-set header (from an sthread) needs any participant's token.</item>
/// </list>
/// <para>Refusals are logged (event 1301 at Information, 1302 at Warning) with the method, the peer and the reason,
/// never a token or its hash, and counted in <c>dse.grpc.headers.refused</c>.</para>
/// </remarks>
public sealed class DseHeaderAuthentication
{
    private readonly ILogger _logger;

    /// <summary>Checks headers against <paramref name="credentials"/>.</summary>
    /// <param name="credentials">The participants whose tokens may send headers.</param>
    /// <param name="acceptUnauthenticatedHeaders">Whether a header from a caller that sends no credential is accepted (default <c>false</c>).</param>
    /// <param name="logger">Where refusals are logged; none by default.</param>
    public DseHeaderAuthentication(DseCredentials credentials, bool acceptUnauthenticatedHeaders = false, ILogger? logger = null)
    {
        ArgumentNullException.ThrowIfNull(credentials);
        Credentials = credentials;
        AcceptUnauthenticatedHeaders = acceptUnauthenticatedHeaders;
        _logger = logger ?? NullLogger.Instance;
    }

    /// <summary>The participants whose tokens may send headers.</summary>
    public DseCredentials Credentials { get; }

    /// <summary>Whether a header from a caller that sends no credential at all is accepted. Default <c>false</c>.</summary>
    public bool AcceptUnauthenticatedHeaders { get; }

    /// <summary>Refuses <paramref name="header"/> unless the call's credential may send it; a None header passes.</summary>
    /// <exception cref="RpcException">UNAUTHENTICATED or PERMISSION_DENIED; the detail names why, never the token.</exception>
    internal void Check(in DseHeader header, ServerCallContext context)
    {
        if (header.Kind == DseHeaderKind.None)
        {
            return;
        }

        var headers = context.RequestHeaders;
        var caller = Credentials.Authenticate(headers, out string reason);
        if (caller is null)
        {
            if (AcceptUnauthenticatedHeaders && !HasCredential(headers))
            {
                return;
            }

            DseGrpcLogMessages.HeaderUnauthenticated(_logger, context.Method, context.Peer, reason);
            Count(context.Method, StatusCode.Unauthenticated);
            throw new RpcException(new Status(StatusCode.Unauthenticated,
                $"{context.Method}: a DSE header is accepted only from an authenticated participant, and {reason}."));
        }

        string? denied = caller.IsOperator
            ? $"the token authenticates {caller}, and an operator speaks for no participant"
            : header.Kind == DseHeaderKind.Origin && !caller.SpeaksFor(header.Origin.ObjectId)
                ? $"the DSE header's origin is participant {header.Origin.ObjectId}, and the token authenticates {caller}"
                : null;
        if (denied is not null)
        {
            DseGrpcLogMessages.HeaderPermissionDenied(_logger, context.Method, context.Peer, denied);
            Count(context.Method, StatusCode.PermissionDenied);
            throw new RpcException(new Status(StatusCode.PermissionDenied, $"{context.Method}: {denied}."));
        }
    }

    private static bool HasCredential(Metadata headers)
    {
        foreach (var entry in headers)
        {
            if (string.Equals(entry.Key, DseCredentials.AuthorizationKey, StringComparison.Ordinal))
            {
                return true;
            }
        }

        return false;
    }

    private static void Count(string method, StatusCode code)
    {
        if (DseGrpcInstrumentation.HeadersRefused.Enabled)
        {
            DseGrpcInstrumentation.HeadersRefused.Add(1, new KeyValuePair<string, object?>("method", method), new KeyValuePair<string, object?>("code", code.ToString()));
        }
    }
}
