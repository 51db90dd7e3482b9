using System.Diagnostics.Metrics;

namespace Dse.Darq.Grpc;

/// <summary>The instruments of DARQ over gRPC, on the DARQ meter (<see cref="DarqInstrumentation.MeterName"/>); every name is defined here.</summary>
public static class DarqGrpcInstrumentation
{
    internal static readonly Meter Meter = new(DarqInstrumentation.MeterName);

    /// <summary>Requests the service refused with a status (tags <c>method</c>, <c>code</c>).</summary>
    internal static readonly Counter<long> Refused = Meter.CreateCounter<long>("dse.darq.grpc.refused", "{request}", "DarqService requests refused with an error status.");

    /// <summary>Remote processor streams open now (tag <c>darq</c>).</summary>
    internal static readonly UpDownCounter<long> ProcessorStreams = Meter.CreateUpDownCounter<long>("dse.darq.grpc.processor.streams", "{stream}", "Remote processor streams open.");

    /// <summary>Enqueues a remote producer resent after UNAVAILABLE or a timeout (tag <c>darq</c>).</summary>
    internal static readonly Counter<long> EnqueueResends = Meter.CreateCounter<long>("dse.darq.grpc.enqueue.resends", "{request}", "Enqueues a remote producer resent (deduplicated by the DARQ).");
}
