using Dse.Darq.Grpc.V1;
using Dse.Grpc;
using Grpc.Core;

namespace Dse.Darq.Grpc;

/// <summary>
/// The bind method <see cref="DarqGrpcService"/> names with <see cref="BindServiceMethodAttribute"/>: the generated binding
/// with request marshallers that answer bytes which do not parse with INVALID_ARGUMENT (<see cref="DseRequestParsing"/>),
/// counted in <c>dse.darq.grpc.refused</c> like every other refusal.
/// </summary>
internal static class DarqServiceBinding
{
    private static readonly Action<string, RpcException> CountRefusal = static (method, status) =>
    {
        if (DarqGrpcInstrumentation.Refused.Enabled)
        {
            // The tag is the method's name, as the service's own refusals carry it.
            string name = method[(method.LastIndexOf('/') + 1)..];
            DarqGrpcInstrumentation.Refused.Add(1, new KeyValuePair<string, object?>("method", name), new KeyValuePair<string, object?>("code", status.StatusCode.ToString()));
        }
    };

    /// <summary>Binds <c>dse.darq.v1.DarqService</c>; grpc-dotnet calls it with a null service and binds the handlers itself.</summary>
    public static void Bind(ServiceBinderBase binder, DarqService.DarqServiceBase? service) =>
        DarqService.BindService(DseRequestParsing.RefusingUnparseable(binder, CountRefusal), service);
}
