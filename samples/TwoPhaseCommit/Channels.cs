using Grpc.Net.Client;

namespace Dse.Samples.TwoPhaseCommit;

/// <summary>gRPC channels to the sample's processes: quick reconnects, so a restarted participant is reached again soon.</summary>
internal static class Channels
{
    /// <summary>A channel to <paramref name="address"/> (HTTP/2 without TLS), retrying a lost connection within half a second.</summary>
    public static GrpcChannel Create(Uri address) => GrpcChannel.ForAddress(address, new GrpcChannelOptions
    {
        InitialReconnectBackoff = TimeSpan.FromMilliseconds(100),
        MaxReconnectBackoff = TimeSpan.FromMilliseconds(500),
        MaxReceiveMessageSize = null,
        MaxSendMessageSize = null,
    });
}
