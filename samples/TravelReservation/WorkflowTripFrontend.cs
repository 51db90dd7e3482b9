using System.Text.Json;
using Dse.Samples.Shared;
using Dse.Workflows.Grpc.V1;
using Google.Protobuf;
using Grpc.Core;
using Grpc.Net.Client;

namespace Dse.Samples.TravelReservation;

/// <summary>
/// The launcher's client of the frontend: the workflow engine's generic <c>dse.workflows.v1.WorkflowService</c>, called
/// without a DSE header, so every answer shows only recoverable state. A trip is one <c>Execute</c> of the
/// <see cref="TripWorkflow"/> with the trip's id as the workflow id.
/// </summary>
internal sealed class WorkflowTripFrontend : ITripFrontend
{
    // The engine's default serializer (WorkflowEngineOptions.SerializerOptions), which the frontend keeps.
    private static readonly JsonSerializerOptions s_json = JsonSerializerOptions.Web;

    private readonly GrpcChannel _channel;
    private readonly WorkflowService.WorkflowServiceClient _client;

    private WorkflowTripFrontend(Uri address)
    {
        _channel = Channels.Create(address, authority: null);
        _client = new WorkflowService.WorkflowServiceClient(_channel);
    }

    /// <summary>A client of the frontend at <paramref name="address"/>; it reconnects quickly after a restart on the same port.</summary>
    public static WorkflowTripFrontend Connect(Uri address) => new(address);

    /// <inheritdoc />
    public async Task<string> BookAsync(string trip, TripInput input, DateTime deadline, CancellationToken cancellationToken)
    {
        var request = new StartRequest { Type = TripWorkflow.Type, Id = trip, Input = ByteString.CopyFrom(JsonSerializer.SerializeToUtf8Bytes(input, s_json)) };
        ResultReply reply;
        try
        {
            reply = await _client.ExecuteAsync(request, deadline: deadline, cancellationToken: cancellationToken).ConfigureAwait(false);
        }
        catch (RpcException ex) when (ex.StatusCode == StatusCode.NotFound)
        {
            // Execute started the workflow, then a rollback took the start away before its outcome was released: nothing
            // of the trip survives, and Execute again starts it anew. The caller retries ABORTED calls.
            throw new RpcException(new Status(StatusCode.Aborted, ex.Status.Detail, ex));
        }

        return Outcome(reply.Status, reply.Result, reply.ErrorType, reply.ErrorMessage);
    }

    /// <inheritdoc />
    public async Task<IReadOnlyList<string>?> DescribeAsync(string trip, DateTime deadline, CancellationToken cancellationToken)
    {
        DescribeReply reply;
        try
        {
            reply = await _client.DescribeAsync(new DescribeRequest { Id = trip }, deadline: deadline, cancellationToken: cancellationToken).ConfigureAwait(false);
        }
        catch (RpcException ex) when (ex.StatusCode == StatusCode.NotFound)
        {
            return null;
        }

        return reply.Status == WorkflowStatus.Running ? [] : [Outcome(reply.Status, reply.Result, reply.ErrorType, reply.ErrorMessage)];
    }

    /// <inheritdoc />
    public void Dispose() => _channel.Dispose();

    /// <summary>The trip's outcome: the workflow's result, or <c>error: ...</c> for a workflow that did not complete (no trip outcome).</summary>
    private static string Outcome(WorkflowStatus status, ByteString result, string errorType, string errorMessage) => status == WorkflowStatus.Completed
        ? JsonSerializer.Deserialize<string>(result.Span, s_json) ?? "error: an empty result"
        : $"error: workflow {status}: {errorType}: {errorMessage}";
}
