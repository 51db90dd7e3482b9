using System.Globalization;
using Grpc.Core;

namespace Dse.Grpc;

/// <summary>The statuses DSE gives calls it refuses or abandons, so callers see one clear error per cause.</summary>
internal static class DseRpcErrors
{
    /// <summary>ABORTED: the request came from state that was rolled back, so it was discarded unprocessed.</summary>
    public static RpcException Discarded(StateObject owner, string method) =>
        RolledBack(owner.WorldLine, $"The request to {method} came from state that was rolled back by a failure; StateObject {owner.Id} discarded it without running it.");

    /// <summary>ABORTED: a reply came from state that was rolled back, so the caller must not use it.</summary>
    public static RpcException ReplyDiscarded(long worldLine, string method) =>
        RolledBack(worldLine, $"The reply from {method} came from state that was rolled back by a failure; it was discarded.");

    /// <summary>INVALID_ARGUMENT: the caller's DSE header does not parse, or breaks the receiver's rules; the message says how.</summary>
    public static RpcException MalformedHeader(DseHeaderFormatException error) =>
        new(new Status(StatusCode.InvalidArgument, $"Malformed DSE header in '{DseMetadata.HeaderKey}': {error.Message}"));

    /// <summary>INVALID_ARGUMENT: the DSE header in the request message does not parse, or breaks the receiver's rules.</summary>
    public static RpcException MalformedMessageHeader(DseHeaderFormatException error) =>
        new(new Status(StatusCode.InvalidArgument, $"Malformed DSE header in the request message's header field: {error.Message}"));

    /// <summary>INVALID_ARGUMENT: the call carries a DSE header both in its request message and in its metadata.</summary>
    public static RpcException TwoHeaders(string method) =>
        new(new Status(StatusCode.InvalidArgument,
            $"{method}: the call carries a DSE header both in its request message and in '{DseMetadata.HeaderKey}' metadata; a call carries one, in either place."));

    /// <summary>Maps what a DSE call can fail with to a status; other exceptions are returned unchanged.</summary>
    public static Exception Map(Exception error, StateObject owner, string method) => error switch
    {
        RpcException => error,
        DseRolledBackException rolledBack => RolledBack(rolledBack.WorldLine, $"{method} was rolled back: {rolledBack.Message} Nothing it did survived; retry the call."),
        DseFaultedException faulted => new RpcException(new Status(StatusCode.Unavailable, $"{method}: StateObject {owner.Id} cannot serve calls: {faulted.Message}", faulted)),
        InvalidOperationException when !owner.IsConnected => new RpcException(new Status(StatusCode.Unavailable, $"{method}: StateObject {owner.Id} is not connected to its coordinator yet.", error)),
        _ => error,
    };

    /// <summary>ABORTED with the decision's world-line in the <see cref="DseMetadata.RolledBackKey"/> trailer.</summary>
    public static RpcException RolledBack(long worldLine, string message)
    {
        var trailers = new Metadata { { DseMetadata.RolledBackKey, worldLine.ToString(CultureInfo.InvariantCulture) } };
        return new RpcException(new Status(StatusCode.Aborted, message), trailers);
    }
}
