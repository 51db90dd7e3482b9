using Dse.Grpc;
using Dse.Samples.HelloDse.Wire;
using Grpc.Core;

namespace Dse.Samples.HelloDse;

/// <summary>
/// The bind methods the services name with <see cref="BindServiceMethodAttribute"/>: the generated bindings, with request
/// bytes that do not parse answered INVALID_ARGUMENT (<see cref="DseRequestParsing"/>, docs/grpc.md).
/// </summary>
internal static class HelloDseBindings
{
    public static void BindGreeter(ServiceBinderBase binder, Greeter.GreeterBase? service) =>
        Greeter.BindService(DseRequestParsing.RefusingUnparseable(binder), service);

    public static void BindVisits(ServiceBinderBase binder, Visits.VisitsBase? service) =>
        Visits.BindService(DseRequestParsing.RefusingUnparseable(binder), service);
}
