using Dse.Grpc;
using Dse.Services.Grpc.V1;
using Google.Protobuf;
using Grpc.Core;

namespace Dse.Benchmarks.Scenarios.Interceptor;

/// <summary>The no-DSE baseline: KeyValueService's Get and Put as a thin wrapper over <see cref="PlainKvStore"/>.</summary>
[BindServiceMethod(typeof(NoDseKvService), nameof(Bind))]
internal sealed class NoDseKvService(PlainKvStore store) : KeyValueService.KeyValueServiceBase
{
    /// <summary>Binds as the DSE services bind (bytes that do not parse are INVALID_ARGUMENT), so both sides parse alike.</summary>
    public static void Bind(ServiceBinderBase binder, KeyValueService.KeyValueServiceBase? service) =>
        KeyValueService.BindService(DseRequestParsing.RefusingUnparseable(binder), service);

    public override Task<GetReply> Get(GetRequest request, ServerCallContext context)
    {
        var value = store.Get(request.Key.Span);
        return Task.FromResult(value is null ? new GetReply() : new GetReply { Found = true, Value = UnsafeByteOperations.UnsafeWrap(value) });
    }

    public override async Task<PutReply> Put(PutRequest request, ServerCallContext context)
    {
        await store.PutAsync(request.Key.Memory, request.Value.Memory).ConfigureAwait(false);
        return new PutReply();
    }
}
