using System.Globalization;
using Grpc.Core;

namespace Dse.Workflows.Grpc;

/// <summary>
/// The statuses of the workflow service's refusals, each with a detail naming what was wrong and a
/// <see cref="ErrorKey"/> trailer that tells <see cref="WorkflowClient"/> which engine exception to raise.
/// </summary>
internal static class WorkflowRpcErrors
{
    /// <summary>The trailer naming the kind of refusal: <see cref="UnknownType"/>, <see cref="InvalidArgument"/>, ...</summary>
    public const string ErrorKey = "dse-workflow-error";

    /// <summary>The trailer of a FAILED_PRECONDITION naming the workflow's status (<c>Completed</c>, <c>Stopped</c>, ...).</summary>
    public const string StatusKey = "dse-workflow-status";

    public const string UnknownType = "unknown-type";
    public const string InvalidArgument = "invalid-argument";
    public const string NotFound = "not-found";
    public const string NotRunning = "not-running";
    public const string Unavailable = "unavailable";

    /// <summary>The status for what the engine threw; <c>null</c> for anything else (DSE's own statuses, cancellation), to be rethrown as is.</summary>
    public static RpcException? Map(Exception error, string method) => error switch
    {
        RpcException or OperationCanceledException => null,
        UnknownWorkflowTypeException unknown => Refuse(StatusCode.InvalidArgument, UnknownType, $"{method}: {unknown.Message}"),
        ArgumentException argument => Refuse(StatusCode.InvalidArgument, InvalidArgument, $"{method}: {argument.Message}"),
        WorkflowNotFoundException notFound => Refuse(StatusCode.NotFound, NotFound, $"{method}: {notFound.Message}"),
        WorkflowNotRunningException notRunning => Refuse(StatusCode.FailedPrecondition, NotRunning, $"{method}: {notRunning.Message}",
            notRunning.Status.ToString()),
        WorkflowEngineUnavailableException unavailable => Refuse(StatusCode.Unavailable, Unavailable, $"{method}: {unavailable.Message}"),
        DseFaultedException faulted => Refuse(StatusCode.Unavailable, Unavailable, $"{method}: the workflow log cannot serve calls: {faulted.Message}"),
        _ => null,
    };

    /// <summary>INVALID_ARGUMENT for a request field that is missing or wrong; the message names it.</summary>
    public static RpcException BadRequest(string method, string message) =>
        Refuse(StatusCode.InvalidArgument, InvalidArgument, $"{method}: {message}");

    /// <summary>UNAVAILABLE: the host stops, so the call's wait ended; the workflow goes on and another call may fetch its outcome.</summary>
    public static RpcException HostStopping(string method, string id) =>
        Refuse(StatusCode.Unavailable, Unavailable, string.Create(CultureInfo.InvariantCulture,
            $"{method}: the host is stopping, so the wait for workflow '{id}' ended; the workflow goes on, ask again once the host serves."));

    private static RpcException Refuse(StatusCode code, string kind, string detail, string? status = null)
    {
        var trailers = new Metadata { { ErrorKey, kind } };
        if (status is not null)
        {
            trailers.Add(StatusKey, status);
        }

        return new RpcException(new Status(code, detail), trailers);
    }
}
