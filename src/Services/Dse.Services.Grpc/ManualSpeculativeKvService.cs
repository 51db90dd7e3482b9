using Dse.Grpc;
using Dse.Services.Grpc.V1;
using Google.Protobuf;
using Grpc.Core;

namespace Dse.Services.Grpc;

/// <summary>
/// The key-value store's gRPC API (<c>dse.services.v1.KeyValueService</c>) with DSE written by hand: host it WITHOUT
/// <see cref="DseServerInterceptor"/>. Each call is exactly one action: it starts from the caller's DSE header
/// (<see cref="DseManualCall.StartActionAsync(StateObject, ServerCallContext, ReadOnlyMemory{byte}, DseHeaderAuthentication?)"/>),
/// runs the store operation, and ends with
/// <see cref="DseManualCall.EndActionAsync(StateObject, ServerCallContext, DseHeaderCarrier, bool)"/>, which returns the
/// header to a speculative caller at once and holds the reply to a non-speculative caller until its state is
/// recoverable. The caller's header arrives in the call's metadata (as <see cref="DseClientInterceptor"/> sends it; the
/// reply's goes in the trailers) or in the request's <c>dse_header</c> field (the reply's goes in the reply's): a few
/// bytes of the message instead of an HTTP/2 header each way (docs/grpc.md, "Carrying the header in your messages").
/// </summary>
/// <remarks>
/// <para>The action is held across the store's await on purpose. A store operation completes synchronously unless a
/// checkpoint is queued behind one still flushing; then it waits, and must still run inside an action (an operation
/// outside one could overlap Persist or Restore and land in a version nobody depends on). That wait depends only on
/// the previous checkpoint's flush, never on a version advance or on the action gate, so holding the action cannot
/// deadlock; it only delays the next version advance until the flush ends. Detaching across it instead (as the
/// interceptor does) would need a merge before the operation, which is what the interceptor's context provides.</para>
/// <para>On the common path nothing suspends: the start, the operation and the end all complete synchronously.</para>
/// </remarks>
[BindServiceMethod(typeof(ServiceBindings), nameof(ServiceBindings.BindKeyValueService))]
public sealed class ManualSpeculativeKvService : KeyValueService.KeyValueServiceBase
{
    private readonly SpeculativeKv _kv;
    private readonly DseHeaderAuthentication? _authentication;

    /// <summary>
    /// Serves <paramref name="kv"/>, accepting DSE headers only from callers <paramref name="authentication"/> accepts
    /// (hosting registers it from <c>Dse:Participants</c>); <c>null</c>: from any caller.
    /// </summary>
    public ManualSpeculativeKvService(SpeculativeKv kv, DseHeaderAuthentication? authentication = null)
    {
        ArgumentNullException.ThrowIfNull(kv);
        _kv = kv;
        _authentication = authentication;
    }

    /// <inheritdoc />
    public override Task<GetReply> Get(GetRequest request, ServerCallContext context) =>
        RunAsync(request, context, static (kv, r, c) => KvRpc.GetAsync(kv, r, c));

    /// <inheritdoc />
    public override Task<PutReply> Put(PutRequest request, ServerCallContext context) =>
        RunAsync(request, context, static (kv, r, c) => KvRpc.PutAsync(kv, r, c));

    /// <inheritdoc />
    public override Task<DeleteReply> Delete(DeleteRequest request, ServerCallContext context) =>
        RunAsync(request, context, static (kv, r, c) => KvRpc.DeleteAsync(kv, r, c));

    /// <inheritdoc />
    public override Task<CompareAndSwapReply> CompareAndSwap(CompareAndSwapRequest request, ServerCallContext context) =>
        RunAsync(request, context, static (kv, r, c) => KvRpc.CompareAndSwapAsync(kv, r, c));

    /// <inheritdoc />
    public override Task<ExecuteReply> Execute(ExecuteRequest request, ServerCallContext context) =>
        RunAsync(request, context, static (kv, r, c) => KvRpc.ExecuteAsync(kv, r, c));

    /// <summary>
    /// Runs one operation as one action, its header taken from the request's <c>dse_header</c> field or the call's
    /// metadata and the server's returned the same way; an error reply is released like a result (it may depend on state).
    /// </summary>
    private async Task<TReply> RunAsync<TRequest, TReply>(TRequest request, ServerCallContext context, Func<SpeculativeKv, TRequest, ServerCallContext, ValueTask<TReply>> operation)
        where TRequest : IKvRequest
        where TReply : IKvReply
    {
        var carrier = await DseManualCall.StartActionAsync(_kv, context, request.DseHeader.Memory, _authentication);
        TReply reply;
        try
        {
            reply = await operation(_kv, request, context);
        }
        catch
        {
            await DseManualCall.EndActionAsync(_kv, context, carrier, failed: true);
            throw;
        }

        var header = await DseManualCall.EndActionAsync(_kv, context, carrier);
        if (header.Kind != DseHeaderKind.None)
        {
            reply.DseHeader = UnsafeByteOperations.UnsafeWrap(header.ToArray());
        }

        return reply;
    }
}
