using System.Diagnostics.Metrics;

namespace Dse.Darq.Grpc;

/// <summary>The DARQ gRPC meter and its instruments; every name is defined here.</summary>
public static class DarqGrpcInstrumentation
{
    /// <summary>The name of the DARQ gRPC <see cref="System.Diagnostics.Metrics.Meter"/> (the package's own; the DARQ's is <see cref="DarqInstrumentation.MeterName"/>).</summary>
    public const string MeterName = "Dse.Darq.Grpc";

    internal static readonly Meter Meter = new(MeterName);

    /// <summary>Requests the service refused with a status (tags <c>method</c>, <c>code</c>).</summary>
    internal static readonly Counter<long> Refused = Meter.CreateCounter<long>("dse.darq.grpc.refused", "{request}", "DarqService requests refused with an error status.");

    /// <summary>Remote processor streams open now (tag <c>darq</c>).</summary>
    internal static readonly UpDownCounter<long> ProcessorStreams = Meter.CreateUpDownCounter<long>("dse.darq.grpc.processor.streams", "{stream}", "Remote processor streams open.");

    /// <summary>Enqueues a remote producer resent after UNAVAILABLE or a timeout (tag <c>darq</c>).</summary>
    internal static readonly Counter<long> EnqueueResends = Meter.CreateCounter<long>("dse.darq.grpc.enqueue.resends", "{request}", "Enqueues a remote producer resent (deduplicated by the DARQ).");
}
