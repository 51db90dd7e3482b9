using System.Diagnostics.Metrics;

namespace Dse.Grpc;

/// <summary>The Dse.Grpc meter and its instruments; every name is defined here (docs/metrics.md lists them).</summary>
public static class DseGrpcInstrumentation
{
    /// <summary>The name of the Dse.Grpc <see cref="System.Diagnostics.Metrics.Meter"/> (the package's own; LibDse's is <see cref="DseTelemetry.Name"/>).</summary>
    public const string MeterName = "Dse.Grpc";

    internal static readonly Meter Meter = new(MeterName);

    /// <summary>Unary replies to calls that sent a DSE header, that came back with neither a header nor the barrier trailer (tag <c>method</c>).</summary>
    internal static readonly Counter<long> RepliesWithoutHeader = Meter.CreateCounter<long>("dse.grpc.replies.without_header", "{reply}",
        "Replies to calls that sent a DSE header and came back without one: the server has no DSE, so it ran outside any action.");

    /// <summary>Calls refused because their DSE header came from a caller that may not send it (tags <c>method</c>, <c>code</c>).</summary>
    internal static readonly Counter<long> HeadersRefused = Meter.CreateCounter<long>("dse.grpc.headers.refused", "{call}",
        "Calls refused because their DSE header came from a caller that is not an authenticated participant, or from a participant the header does not name.");
}
