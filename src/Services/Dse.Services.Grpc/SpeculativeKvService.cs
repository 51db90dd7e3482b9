using Dse.Services.Grpc.V1;
using Grpc.Core;

namespace Dse.Services.Grpc;

/// <summary>
/// The key-value store's gRPC API (<c>dse.services.v1.KeyValueService</c>) as plain gRPC over a
/// <see cref="SpeculativeKv"/>: host it with a <see cref="Dse.Grpc.DseServerInterceptor"/> on the same store, which runs
/// each call as an action and releases replies as the caller's kind requires.
/// </summary>
/// <remarks>
/// Without the interceptor the store's operations would run outside any action, which the store forbids; use
/// <see cref="ManualSpeculativeKvService"/> to host without it. Errors: see <c>protos/dse/services/v1/kv.proto</c>.
/// </remarks>
[BindServiceMethod(typeof(ServiceBindings), nameof(ServiceBindings.BindKeyValueService))]
public sealed class SpeculativeKvService : KeyValueService.KeyValueServiceBase
{
    private readonly SpeculativeKv _kv;

    /// <summary>Serves <paramref name="kv"/>, which must be the interceptor's StateObject.</summary>
    public SpeculativeKvService(SpeculativeKv kv)
    {
        ArgumentNullException.ThrowIfNull(kv);
        _kv = kv;
    }

    /// <inheritdoc />
    public override Task<GetReply> Get(GetRequest request, ServerCallContext context) => KvRpc.GetAsync(_kv, request, context).AsTask();

    /// <inheritdoc />
    public override Task<PutReply> Put(PutRequest request, ServerCallContext context) => KvRpc.PutAsync(_kv, request, context).AsTask();

    /// <inheritdoc />
    public override Task<DeleteReply> Delete(DeleteRequest request, ServerCallContext context) => KvRpc.DeleteAsync(_kv, request, context).AsTask();

    /// <inheritdoc />
    public override Task<CompareAndSwapReply> CompareAndSwap(CompareAndSwapRequest request, ServerCallContext context) => KvRpc.CompareAndSwapAsync(_kv, request, context).AsTask();

    /// <inheritdoc />
    public override Task<ExecuteReply> Execute(ExecuteRequest request, ServerCallContext context) => KvRpc.ExecuteAsync(_kv, request, context).AsTask();
}
