using Dse.Testing.Wire;
using Grpc.Core;

namespace Dse.Hosting.TestHost;

/// <summary>Back.Add: counts the amount.</summary>
internal sealed class BackService(BackTotal total) : Back.BackBase
{
    public override Task<AddReply> Add(AddRequest request, ServerCallContext context) =>
        Task.FromResult(new AddReply { Total = total.Add(request.Amount) });
}
