using Dse.Testing.Wire;
using Grpc.Core;

namespace Dse.Hosting.Tests;

/// <summary>The test host proto's Back service on a <see cref="CounterStateObject"/>: each call adds one.</summary>
internal sealed class CounterBackService(CounterStateObject counter) : Back.BackBase
{
    // Runs inside the call's action, which the interceptor started.
    public override Task<AddReply> Add(AddRequest request, ServerCallContext context) =>
        Task.FromResult(new AddReply { Total = counter.AddInAction(request.Amount) });
}
