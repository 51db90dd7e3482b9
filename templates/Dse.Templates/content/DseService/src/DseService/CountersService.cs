using DseService.Wire;
using Grpc.Core;

namespace DseService;

/// <summary>
/// A plain gRPC service over <see cref="CounterBook"/>. The DSE server interceptor runs each call as an action and holds
/// the reply to a caller outside DSE until the state it shows is recoverable: the handlers contain no DSE code.
/// </summary>
public sealed class CountersService(CounterBook book) : Counters.CountersBase
{
    /// <inheritdoc />
    public override Task<AddReply> Add(AddRequest request, ServerCallContext context)
    {
        ArgumentNullException.ThrowIfNull(request);
        if (string.IsNullOrWhiteSpace(request.Name))
        {
            throw new RpcException(new Status(StatusCode.InvalidArgument, "AddRequest.name must not be empty."));
        }

        // One synchronous segment, so one action: the value and the version it ran in belong together.
        return Task.FromResult(new AddReply { Value = book.Add(request.Name, request.Delta), Version = book.CurrentVersion });
    }

    /// <inheritdoc />
    public override Task<GetReply> Get(GetRequest request, ServerCallContext context)
    {
        ArgumentNullException.ThrowIfNull(request);
        return Task.FromResult(new GetReply { Value = book.Get(request.Name) });
    }
}
