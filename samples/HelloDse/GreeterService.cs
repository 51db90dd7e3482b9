using Dse.Samples.HelloDse.Wire;
using Grpc.Core;
using Microsoft.Extensions.Logging;

namespace Dse.Samples.HelloDse;

/// <summary>
/// The Greeter gRPC service: asks Visits how often the name was greeted, counts the greeting and answers. The call to
/// Visits goes through a client with the <see cref="Grpc.DseClientInterceptor"/>, so it carries the Greeter's state and
/// brings Visits' state back into it; the reply to a caller without DSE waits at a barrier until all of it is recoverable.
/// </summary>
[BindServiceMethod(typeof(HelloDseBindings), nameof(HelloDseBindings.BindGreeter))]
public sealed partial class GreeterService(GreetingCount greetings, Visits.VisitsClient visits, IDseCoordinator coordinator, ILogger<GreeterService> logger)
    : Greeter.GreeterBase
{
    /// <inheritdoc />
    public override async Task<GreetReply> Greet(GreetRequest request, ServerCallContext context)
    {
        ArgumentNullException.ThrowIfNull(request);
        ArgumentNullException.ThrowIfNull(context);
        var visit = await visits.RecordAsync(new RecordRequest { Name = request.Name }, cancellationToken: context.CancellationToken);

        // Speculation at work: with it on, Visits answers before the version its answer came from is committed.
        var cluster = await coordinator.GetStateAsync(context.CancellationToken);
        long committed = cluster.CommittedVersion(HelloDseIds.Visits);
        if (committed < visit.Version)
        {
            LogRanAhead(logger, request.Name, visit.Version, committed);
        }
        else
        {
            LogAlreadyCommitted(logger, request.Name, visit.Version, committed);
        }

        greetings.Increment();
        return new GreetReply { Message = $"Hello, {request.Name}! Visit number {visit.Visits}." };
    }

    [LoggerMessage(EventId = 1, Level = LogLevel.Information,
        Message = "Greet({Name}): Visits answered from version {Version}, which the coordinator has not committed yet (committed: {Committed}): speculative")]
    private static partial void LogRanAhead(ILogger logger, string name, long version, long committed);

    [LoggerMessage(EventId = 2, Level = LogLevel.Information,
        Message = "Greet({Name}): Visits answered from version {Version}, already committed (committed: {Committed})")]
    private static partial void LogAlreadyCommitted(ILogger logger, string name, long version, long committed);
}
