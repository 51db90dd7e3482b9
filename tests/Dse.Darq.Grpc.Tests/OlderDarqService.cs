using Dse.Darq.Grpc.V1;
using Grpc.Core;
using Microsoft.Extensions.Logging;

namespace Dse.Darq.Grpc.Tests;

/// <summary>
/// A server from before DeliverBatch: only <c>Deliver</c> is implemented (by the real service); every other method,
/// DeliverBatch included, answers UNIMPLEMENTED as the generated base does.
/// </summary>
internal sealed class OlderDarqService(IDarqResolver resolver, ILogger<DarqGrpcService> logger) : DarqService.DarqServiceBase
{
    private readonly DarqGrpcService _current = new(resolver, logger);

    public override Task<DeliverReply> Deliver(DeliverRequest request, ServerCallContext context) => _current.Deliver(request, context);
}
