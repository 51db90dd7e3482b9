using Dse.Samples.HelloDse.Wire;
using Grpc.Core;

namespace Dse.Samples.HelloDse;

/// <summary>
/// The Visits gRPC service: plain gRPC code. The DSE server interceptor (wired by <c>AddGrpcInterceptors&lt;VisitBook&gt;</c>)
/// runs each call as an action of <see cref="VisitBook"/>, takes the caller's DSE header in and puts its own in the reply.
/// </summary>
[BindServiceMethod(typeof(HelloDseBindings), nameof(HelloDseBindings.BindVisits))]
public sealed class VisitsService(VisitBook book) : Visits.VisitsBase
{
    /// <inheritdoc />
    public override Task<RecordReply> Record(RecordRequest request, ServerCallContext context)
    {
        ArgumentNullException.ThrowIfNull(request);
        if (string.IsNullOrWhiteSpace(request.Name))
        {
            throw new RpcException(new Status(StatusCode.InvalidArgument, "RecordRequest.name must not be empty."));
        }

        // One synchronous segment, so one action: the count and the version it ran in belong together.
        return Task.FromResult(new RecordReply { Visits = book.Record(request.Name), Version = book.CurrentVersion });
    }
}
