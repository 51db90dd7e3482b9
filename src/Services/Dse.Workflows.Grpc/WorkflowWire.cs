using Google.Protobuf;

namespace Dse.Workflows.Grpc;

/// <summary>Conversions between the engine's types and the messages of <c>dse.workflows.v1</c>.</summary>
internal static class WorkflowWire
{
    public static V1.WorkflowStatus ToWire(WorkflowStatus status) => status switch
    {
        WorkflowStatus.Running => V1.WorkflowStatus.Running,
        WorkflowStatus.Completed => V1.WorkflowStatus.Completed,
        WorkflowStatus.Failed => V1.WorkflowStatus.Failed,
        WorkflowStatus.Cancelled => V1.WorkflowStatus.Cancelled,
        WorkflowStatus.Stopped => V1.WorkflowStatus.Stopped,
        _ => throw new ArgumentOutOfRangeException(nameof(status), status, "Not a workflow status."),
    };

    /// <summary>The engine's status for <paramref name="status"/>; <c>null</c> for one this version does not know (or unspecified).</summary>
    public static WorkflowStatus? FromWire(V1.WorkflowStatus status) => status switch
    {
        V1.WorkflowStatus.Running => WorkflowStatus.Running,
        V1.WorkflowStatus.Completed => WorkflowStatus.Completed,
        V1.WorkflowStatus.Failed => WorkflowStatus.Failed,
        V1.WorkflowStatus.Cancelled => WorkflowStatus.Cancelled,
        V1.WorkflowStatus.Stopped => WorkflowStatus.Stopped,
        _ => null,
    };

    public static V1.ResultReply ToReply(WorkflowOutcome outcome) => new()
    {
        Status = ToWire(outcome.Status),
        Result = Bytes(outcome.Result),
        ErrorType = outcome.ErrorType ?? string.Empty,
        ErrorMessage = outcome.ErrorMessage ?? string.Empty,
    };

    public static V1.DescribeReply ToReply(WorkflowDescription description) => new()
    {
        Id = description.Id,
        Type = description.Type,
        Run = description.Run,
        Status = ToWire(description.Status),
        HistoryLength = description.HistoryLength,
        PendingCommands = description.PendingCommands,
        Result = description.Outcome is { } outcome ? Bytes(outcome.Result) : ByteString.Empty,
        ErrorType = description.Outcome?.ErrorType ?? string.Empty,
        ErrorMessage = description.Outcome?.ErrorMessage ?? string.Empty,
    };

    // The engine never changes a result once recorded: wrap it rather than copy.
    private static ByteString Bytes(ReadOnlyMemory<byte> bytes) => bytes.IsEmpty ? ByteString.Empty : UnsafeByteOperations.UnsafeWrap(bytes);
}
