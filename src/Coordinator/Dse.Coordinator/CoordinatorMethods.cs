using Dse.Grpc;
using Google.Protobuf;
using Google.Protobuf.Reflection;
using Grpc.Core;
using Wire = Dse.Coordinator.Grpc;

namespace Dse.Coordinator;

/// <summary>
/// The methods of service <c>dse.coordinator.v1.Coordinator</c>, each checked against the proto's descriptor. Their
/// request marshallers answer bytes that do not parse as the request message with INVALID_ARGUMENT and the
/// <c>dse-error-code</c> trailer (<see cref="DseRequestParsing"/>, as every service of the repository does), where
/// unchecked ones would end the call with UNKNOWN.
/// </summary>
internal static class CoordinatorMethods
{
    /// <summary>The response trailer that carries the <see cref="CoordinatorErrorCode"/> name of a refused request.</summary>
    public const string ErrorCodeTrailer = "dse-error-code";

    private static readonly ServiceDescriptor Service = Wire.CoordinatorReflection.Descriptor.Services[0];

    public static readonly Method<Wire.ConnectRequest, Wire.ConnectResponse> Connect = Unary<Wire.ConnectRequest, Wire.ConnectResponse>("Connect");

    public static readonly Method<Wire.ReportPersistedRequest, Wire.ReportPersistedResponse> ReportPersisted = Unary<Wire.ReportPersistedRequest, Wire.ReportPersistedResponse>("ReportPersisted");

    public static readonly Method<Wire.AcknowledgeRollbackRequest, Wire.AcknowledgeRollbackResponse> AcknowledgeRollback = Unary<Wire.AcknowledgeRollbackRequest, Wire.AcknowledgeRollbackResponse>("AcknowledgeRollback");

    public static readonly Method<Wire.ResyncRequest, Wire.ResyncResponse> Resync = Unary<Wire.ResyncRequest, Wire.ResyncResponse>("Resync");

    public static readonly Method<Wire.HeartbeatRequest, Wire.HeartbeatResponse> Heartbeat = Unary<Wire.HeartbeatRequest, Wire.HeartbeatResponse>("Heartbeat");

    public static readonly Method<Wire.GetStateRequest, Wire.GetStateResponse> GetState = Unary<Wire.GetStateRequest, Wire.GetStateResponse>("GetState");

    public static readonly Method<Wire.WaitForChangeRequest, Wire.WaitForChangeResponse> WaitForChange = Unary<Wire.WaitForChangeRequest, Wire.WaitForChangeResponse>("WaitForChange");

    public static readonly Method<Wire.RemoveParticipantRequest, Wire.RemoveParticipantResponse> RemoveParticipant = Unary<Wire.RemoveParticipantRequest, Wire.RemoveParticipantResponse>("RemoveParticipant");

    public static readonly Method<Wire.InspectRequest, Wire.InspectResponse> Inspect = Unary<Wire.InspectRequest, Wire.InspectResponse>("Inspect");

    /// <summary>The fully qualified service name, <c>dse.coordinator.v1.Coordinator</c>.</summary>
    public static string ServiceName => Service.FullName;

    /// <summary>The refusal of a request: the mapped status, the coordinator's message, and the code in the trailer.</summary>
    public static RpcException Refusal(CoordinatorErrorCode code, string message) =>
        new(new Status(StatusCodeOf(code), message), new Metadata { { ErrorCodeTrailer, code.ToString() } });

    /// <summary>The gRPC status of each refusal; documented in the proto.</summary>
    public static StatusCode StatusCodeOf(CoordinatorErrorCode code) => code switch
    {
        CoordinatorErrorCode.InvalidRequest => StatusCode.InvalidArgument,
        CoordinatorErrorCode.UnknownParticipant => StatusCode.NotFound,
        CoordinatorErrorCode.FutureWorldLine => StatusCode.OutOfRange,
        CoordinatorErrorCode.Removed => StatusCode.FailedPrecondition,
        CoordinatorErrorCode.ResyncRequired => StatusCode.Aborted,
        CoordinatorErrorCode.Unavailable => StatusCode.Unavailable,
        CoordinatorErrorCode.NotExpected => StatusCode.PermissionDenied,
        _ => StatusCode.Unknown,
    };

    private static Method<TRequest, TResponse> Unary<TRequest, TResponse>(string name)
        where TRequest : class, IMessage<TRequest>, new()
        where TResponse : class, IMessage<TResponse>, new()
    {
        // A mismatch is a programming error in this table; any test that starts the service finds it.
        var method = Service.FindMethodByName(name)
            ?? throw new InvalidOperationException($"{Service.FullName} has no method {name}.");
        if (method.InputType != new TRequest().Descriptor || method.OutputType != new TResponse().Descriptor)
        {
            throw new InvalidOperationException($"{method.FullName} takes {method.InputType.FullName} and returns {method.OutputType.FullName}, not {typeof(TRequest).Name} and {typeof(TResponse).Name}.");
        }

        var requestParser = new MessageParser<TRequest>(static () => new TRequest());
        var responseParser = new MessageParser<TResponse>(static () => new TResponse());
        var request = Marshallers.Create<TRequest>(Serialize, context => requestParser.ParseFrom(context.PayloadAsReadOnlySequence()));
        var response = Marshallers.Create<TResponse>(Serialize, context => responseParser.ParseFrom(context.PayloadAsReadOnlySequence()));

        // Refused before the handler runs: the coordinator never sees the request.
        return DseRequestParsing.RefuseUnparseable(new Method<TRequest, TResponse>(MethodType.Unary, Service.FullName, name, request, response),
            trailers: new Metadata { { ErrorCodeTrailer, nameof(CoordinatorErrorCode.InvalidRequest) } });
    }

    private static void Serialize<T>(T message, SerializationContext context)
        where T : IMessage<T>
    {
        context.SetPayloadLength(message.CalculateSize());
        message.WriteTo(context.GetBufferWriter());
        context.Complete();
    }
}
