using Dse.Grpc;
using Dse.Services.Grpc.V1;
using Grpc.Core;

namespace Dse.Services.Grpc;

/// <summary>
/// The bind methods the services name with <see cref="BindServiceMethodAttribute"/>: the generated bindings with request
/// marshallers that answer bytes which do not parse with INVALID_ARGUMENT (<see cref="DseRequestParsing"/>).
/// </summary>
internal static class ServiceBindings
{
    /// <summary>Binds <c>dse.services.v1.KeyValueService</c>; grpc-dotnet calls it with a null service and binds the handlers itself.</summary>
    public static void BindKeyValueService(ServiceBinderBase binder, KeyValueService.KeyValueServiceBase? service) =>
        KeyValueService.BindService(DseRequestParsing.RefusingUnparseable(binder), service);

    /// <summary>Binds <c>dse.services.v1.LogService</c>; grpc-dotnet calls it with a null service and binds the handlers itself.</summary>
    public static void BindLogService(ServiceBinderBase binder, LogService.LogServiceBase? service) =>
        LogService.BindService(DseRequestParsing.RefusingUnparseable(binder), service);
}
