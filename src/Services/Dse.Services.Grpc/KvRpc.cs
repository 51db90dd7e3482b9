using Dse.Services.Grpc.V1;
using Google.Protobuf;
using Grpc.Core;

namespace Dse.Services.Grpc;

/// <summary>
/// The key-value RPCs on a <see cref="SpeculativeKv"/>, without any DSE code: the caller provides the action (the
/// server interceptor, or <see cref="ManualSpeculativeKvService"/> by hand). Store errors become statuses.
/// </summary>
/// <remarks>
/// Awaits keep the caller's context (no <c>ConfigureAwait(false)</c>): under the interceptor, code after an await that
/// did not complete at once runs only once the call has been merged back into an action.
/// </remarks>
internal static class KvRpc
{
    public static async ValueTask<GetReply> GetAsync(SpeculativeKv kv, GetRequest request, ServerCallContext context)
    {
        byte[]? value;
        try
        {
            value = await kv.GetAsync(request.Key.Memory, context.CancellationToken);
        }
        catch (Exception ex) when (ServiceErrors.Map(ex, kv, context.Method) is { } status)
        {
            throw status;
        }

        // The store hands out a fresh array per read: wrap it rather than copy.
        return value is null ? new GetReply() : new GetReply { Found = true, Value = UnsafeByteOperations.UnsafeWrap(value) };
    }

    public static async ValueTask<PutReply> PutAsync(SpeculativeKv kv, PutRequest request, ServerCallContext context)
    {
        try
        {
            await kv.PutAsync(request.Key.Memory, request.Value.Memory, context.CancellationToken);
        }
        catch (Exception ex) when (ServiceErrors.Map(ex, kv, context.Method) is { } status)
        {
            throw status;
        }

        return new PutReply();
    }

    public static async ValueTask<DeleteReply> DeleteAsync(SpeculativeKv kv, DeleteRequest request, ServerCallContext context)
    {
        bool existed;
        try
        {
            existed = await kv.DeleteAsync(request.Key.Memory, context.CancellationToken);
        }
        catch (Exception ex) when (ServiceErrors.Map(ex, kv, context.Method) is { } status)
        {
            throw status;
        }

        return new DeleteReply { Existed = existed };
    }

    public static async ValueTask<CompareAndSwapReply> CompareAndSwapAsync(SpeculativeKv kv, CompareAndSwapRequest request, ServerCallContext context)
    {
        // Typed nulls: a bare null would convert to an empty ReadOnlyMemory (through byte[]), which means "empty value".
        ReadOnlyMemory<byte>? expected = request.HasExpected ? request.Expected.Memory : default(ReadOnlyMemory<byte>?);
        ReadOnlyMemory<byte>? value = request.HasValue ? request.Value.Memory : default(ReadOnlyMemory<byte>?);
        bool swapped;
        try
        {
            swapped = await kv.CompareAndSwapAsync(request.Key.Memory, expected, value, context.CancellationToken);
        }
        catch (Exception ex) when (ServiceErrors.Map(ex, kv, context.Method) is { } status)
        {
            throw status;
        }

        return new CompareAndSwapReply { Swapped = swapped };
    }

    public static async ValueTask<ExecuteReply> ExecuteAsync(SpeculativeKv kv, ExecuteRequest request, ServerCallContext context)
    {
        string name = request.Procedure;
        if (name.Length == 0)
        {
            throw ServiceErrors.InvalidArgument(context.Method, "'procedure' must name a stored procedure.");
        }

        // Procedures are only ever added, so one that exists now still exists when it runs.
        if (!kv.HasProcedure(name))
        {
            throw ServiceErrors.UnknownProcedure(kv, context.Method, name);
        }

        ReadOnlyMemory<byte> output;
        try
        {
            output = await kv.RunProcedureAsync(name, request.Input.Memory, context.CancellationToken);
        }
        catch (Exception ex) when (ex is not (RpcException or OperationCanceledException))
        {
            // Bad input the procedure rejected stays INVALID_ARGUMENT; any other failure is the procedure's own.
            throw ServiceErrors.Map(ex, kv, context.Method) ?? ServiceErrors.ProcedureFailed(context.Method, name, ex);
        }

        // Copied: the procedure's result may alias memory it reuses.
        return new ExecuteReply { Output = ByteString.CopyFrom(output.Span) };
    }
}
