using System.Security.Cryptography.X509Certificates;
using Dse.Coordinator.Client;
using Grpc.Net.Client;

namespace Dse.Samples.Shared;

/// <summary>gRPC channels to the sample's processes: quick reconnects, so a restarted participant is reached again soon.</summary>
internal static class Channels
{
    /// <summary>
    /// A channel to <paramref name="address"/>, retrying a lost connection within half a second: HTTP/2 without TLS for
    /// http, TLS for https, where the server's certificate must chain to <paramref name="authority"/> when given.
    /// </summary>
    public static GrpcChannel Create(Uri address, X509Certificate2? authority) => GrpcChannel.ForAddress(address, new GrpcChannelOptions
    {
        HttpHandler = authority is null ? new SocketsHttpHandler() : TrustedCertificateAuthority.Apply(new SocketsHttpHandler(), authority),
        DisposeHttpClient = true,
        InitialReconnectBackoff = TimeSpan.FromMilliseconds(100),
        MaxReconnectBackoff = TimeSpan.FromMilliseconds(500),
        MaxReceiveMessageSize = null,
        MaxSendMessageSize = null,
    });
}
