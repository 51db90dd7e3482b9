using Dse.Testing.Wire;
using Grpc.Core;

namespace Dse.Hosting.TestHost;

/// <summary>
/// Front.Add: has Back count the amount first, then counts it itself. The call to Back carries Front's state and its
/// reply brings Back's state into the call, so each of Front's additions depends on Back's version that holds it.
/// </summary>
internal sealed class FrontService(FrontTotal total, Back.BackClient back) : Front.FrontBase
{
    public override async Task<AddReply> Add(AddRequest request, ServerCallContext context)
    {
        await back.AddAsync(new AddRequest { Amount = request.Amount }, cancellationToken: context.CancellationToken);
        return new AddReply { Total = total.Add(request.Amount) };
    }
}
