using Dse.Grpc.Tests.Wire;
using Grpc.Core;

namespace Dse.Grpc.Tests;

/// <summary>The relay's Add written with DSE by hand (manual mode), hosted without the server interceptor.</summary>
public sealed class ManualRelayService(RelayNode node, DseHeaderAuthentication? authentication = null) : Relay.RelayBase
{
    public override async Task<AddReply> Add(AddRequest request, ServerCallContext context)
    {
        var counter = node.Counter;
        bool speculativeCaller = await DseManualCall.StartActionAsync(counter, context, authentication);

        // Recorded once the call is accepted, as the interceptor's handler records it: a refused call records nothing.
        node.Record(context);
        long total = counter.Add(request.Amount);
        long version = counter.CurrentVersion;
        await DseManualCall.EndActionAsync(counter, context, speculativeCaller);
        return new AddReply { Total = total, Version = version };
    }
}
