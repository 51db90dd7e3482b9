using Dse.Services.Grpc.V1;
using Dse.Grpc;
using Grpc.Core;

namespace Dse.Services.Grpc;

/// <summary>
/// The key-value store's gRPC API (<c>dse.services.v1.KeyValueService</c>) as plain gRPC over a
/// <see cref="SpeculativeKv"/>: host it with a <see cref="Dse.Grpc.DseServerInterceptor"/> on the same store, which runs
/// each call as an action and releases replies as the caller's kind requires.
/// </summary>
/// <remarks>
/// Without the interceptor the store's operations would run outside any action, which the store forbids; use
/// <see cref="ManualSpeculativeKvService"/> to host without it. A request that carries a DSE header in its <c>dse_header</c>
/// field is refused (INVALID_ARGUMENT): the interceptor reads the header from metadata only. Errors: see
/// <c>protos/dse/services/v1/kv.proto</c>.
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
    public override Task<GetReply> Get(GetRequest request, ServerCallContext context) => KvRpc.GetAsync(_kv, RefuseMessageHeader(request, context), context).AsTask();

    /// <inheritdoc />
    public override Task<PutReply> Put(PutRequest request, ServerCallContext context) => KvRpc.PutAsync(_kv, RefuseMessageHeader(request, context), context).AsTask();

    /// <inheritdoc />
    public override Task<DeleteReply> Delete(DeleteRequest request, ServerCallContext context) => KvRpc.DeleteAsync(_kv, RefuseMessageHeader(request, context), context).AsTask();

    /// <inheritdoc />
    public override Task<CompareAndSwapReply> CompareAndSwap(CompareAndSwapRequest request, ServerCallContext context) => KvRpc.CompareAndSwapAsync(_kv, RefuseMessageHeader(request, context), context).AsTask();

    /// <inheritdoc />
    public override Task<ExecuteReply> Execute(ExecuteRequest request, ServerCallContext context) => KvRpc.ExecuteAsync(_kv, RefuseMessageHeader(request, context), context).AsTask();

    /// <summary>
    /// Refuses a header in the request message: the interceptor consumed the call's metadata before this handler ran, so
    /// a header here would be ignored, and the call's effects would not depend on the caller's state.
    /// </summary>
    private static TRequest RefuseMessageHeader<TRequest>(TRequest request, ServerCallContext context)
        where TRequest : IKvRequest =>
        request.DseHeader.IsEmpty
            ? request
            : throw ServiceErrors.InvalidArgument(context.Method,
                $"this server takes the DSE header in '{DseMetadata.HeaderKey}' metadata (DseClientInterceptor sends it there); 'dse_header' is read only by a server hosted without the interceptor (ManualSpeculativeKvService).");
}
