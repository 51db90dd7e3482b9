using Dse.Grpc;
using Dse.Workflows.Grpc.V1;
using Grpc.Core;

namespace Dse.Workflows.Grpc;

/// <summary>
/// The bind method <see cref="WorkflowGrpcService"/> names with <see cref="BindServiceMethodAttribute"/>: the generated
/// binding with request marshallers that answer bytes which do not parse with INVALID_ARGUMENT (<see cref="DseRequestParsing"/>).
/// </summary>
internal static class WorkflowServiceBinding
{
    /// <summary>Binds <c>dse.workflows.v1.WorkflowService</c>; grpc-dotnet calls it with a null service and binds the handlers itself.</summary>
    public static void Bind(ServiceBinderBase binder, WorkflowService.WorkflowServiceBase? service) =>
        WorkflowService.BindService(DseRequestParsing.RefusingUnparseable(binder), service);
}
