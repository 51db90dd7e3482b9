using Grpc.Core;

namespace Dse.Darq.Grpc;

/// <summary>
/// Options of <see cref="DarqGrpcService"/> (<c>services.Configure&lt;DarqGrpcServiceOptions&gt;(...)</c>). The operator
/// calls (<c>ListParkedDeliveries</c>, <c>RetryParkedDelivery</c>, <c>DiscardOut</c>, <c>RetireProducer</c>) change what a DARQ
/// delivers or deduplicates, so they are off unless the application turns them on, and it may guard them with its own check.
/// </summary>
public sealed class DarqGrpcServiceOptions
{
    /// <summary>
    /// Whether the service answers the operator calls. Default <see langword="false"/>: they fail with UNIMPLEMENTED (as on a
    /// server without them), and change nothing.
    /// </summary>
    public bool EnableOperatorCalls { get; set; }

    /// <summary>
    /// Decides whether the caller of an operator call may make it (for example from
    /// <c>context.GetHttpContext().User</c>, a client certificate or the peer), once <see cref="EnableOperatorCalls"/> is on;
    /// <see langword="false"/> refuses the call with PERMISSION_DENIED before it touches any DARQ. <see langword="null"/> (the
    /// default): every caller that reaches the service may. It runs for every operator call, listing included.
    /// </summary>
    public Func<ServerCallContext, ValueTask<bool>>? AuthorizeOperatorCall { get; set; }
}
