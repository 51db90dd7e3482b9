using Grpc.AspNetCore.Server.Model;

namespace Dse.Coordinator;

/// <summary>Registers <see cref="CoordinatorGrpcService"/>'s methods with the marshallers of <see cref="CoordinatorMethods"/>.</summary>
internal sealed class CoordinatorMethodProvider : IServiceMethodProvider<CoordinatorGrpcService>
{
    public void OnServiceMethodDiscovery(ServiceMethodProviderContext<CoordinatorGrpcService> context)
    {
        context.AddUnaryMethod(CoordinatorMethods.Connect, [], static (service, request, call) => service.Connect(request, call));
        context.AddUnaryMethod(CoordinatorMethods.ReportPersisted, [], static (service, request, call) => service.ReportPersisted(request, call));
        context.AddUnaryMethod(CoordinatorMethods.AcknowledgeRollback, [], static (service, request, call) => service.AcknowledgeRollback(request, call));
        context.AddUnaryMethod(CoordinatorMethods.Resync, [], static (service, request, call) => service.Resync(request, call));
        context.AddUnaryMethod(CoordinatorMethods.Heartbeat, [], static (service, request, call) => service.Heartbeat(request, call));
        context.AddUnaryMethod(CoordinatorMethods.GetState, [], static (service, request, call) => service.GetState(request, call));
        context.AddUnaryMethod(CoordinatorMethods.WaitForChange, [], static (service, request, call) => service.WaitForChange(request, call));
        context.AddUnaryMethod(CoordinatorMethods.RemoveParticipant, [], static (service, request, call) => service.RemoveParticipant(request, call));
        context.AddUnaryMethod(CoordinatorMethods.Inspect, [], static (service, request, call) => service.Inspect(request, call));
    }
}
