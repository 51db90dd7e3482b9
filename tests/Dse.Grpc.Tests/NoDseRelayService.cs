using Dse.Grpc.Tests.Wire;
using Grpc.Core;

namespace Dse.Grpc.Tests;

/// <summary>The relay's Add on a server without DSE: no interceptor, no StateObject; it echoes the amount.</summary>
public sealed class NoDseRelayService : Relay.RelayBase
{
    public override Task<AddReply> Add(AddRequest request, ServerCallContext context) => Task.FromResult(new AddReply { Total = request.Amount });
}
