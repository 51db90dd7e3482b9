using Dse.Testing.Wire;
using Grpc.Core;

namespace Dse.Hosting.Tests;

/// <summary>The test host proto's Front service on a <see cref="CounterStateObject"/>: has Back add first, then adds itself.</summary>
internal sealed class CounterFrontService(CounterStateObject counter, Back.BackClient back) : Front.FrontBase
{
    // The call to Back carries this call's DSE header (and, through hosting's client interceptor, Dse:Token).
    public override async Task<AddReply> Add(AddRequest request, ServerCallContext context)
    {
        await back.AddAsync(new AddRequest { Amount = request.Amount }, cancellationToken: context.CancellationToken);
        return new AddReply { Total = counter.AddInAction(request.Amount) };
    }
}
