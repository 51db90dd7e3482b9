using Dse.Grpc.Tests.Wire;
using Grpc.Core;

namespace Dse.Grpc.Tests;

/// <summary>The relay written as plain gRPC: no DSE code, the interceptor makes it speculative.</summary>
public sealed class RelayService(RelayNode node) : Relay.RelayBase
{
    public override async Task<AddReply> Add(AddRequest request, ServerCallContext context)
    {
        node.Record(context);
        var counter = node.Counter;
        counter.Add(request.Amount);
        if (request.Hold)
        {
            await node.HoldAsync();
        }

        if (request.Fail)
        {
            throw new RpcException(new Status(StatusCode.FailedPrecondition, "asked to fail"));
        }

        long forwarded = 0;
        if (request.Forward && node.Next is { } next)
        {
            try
            {
                forwarded = (await next.AddAsync(new AddRequest { Amount = request.Amount, Hold = request.HoldNext, Fail = request.FailNext })).Total;
            }
            catch (RpcException) when (request.Catch)
            {
                // Runs only if the call is still alive: an abandoned call never resumes.
                counter.Add(1000);
                node.CatchRan.TrySetResult();
                throw;
            }
        }

        return new AddReply { Total = counter.Value, ForwardedTotal = forwarded, Version = counter.CurrentVersion };
    }

    public override async Task Count(CountRequest request, IServerStreamWriter<CountReply> responseStream, ServerCallContext context)
    {
        node.Record(context);
        for (int i = 0; i < request.Count; i++)
        {
            node.Counter.Add(1);
            await responseStream.WriteAsync(new CountReply { Index = i, Version = node.Counter.CurrentVersion }, context.CancellationToken);
        }
    }
}
