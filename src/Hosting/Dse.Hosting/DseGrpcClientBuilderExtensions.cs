using System.Net.Sockets;
using Dse.Grpc;
using Dse.Hosting;
using Microsoft.Extensions.DependencyInjection.Extensions;
using Microsoft.Extensions.Http;

namespace Microsoft.Extensions.DependencyInjection;

/// <summary>Makes a gRPC client registered with <c>AddGrpcClient</c> a DSE client.</summary>
public static class DseGrpcClientBuilderExtensions
{
    /// <summary>
    /// Adds the <see cref="DseClientInterceptor"/> singleton (registered here unless it is already) to the client, so
    /// its calls carry the caller's speculative state and take a dependency on the reply's, and makes the client's
    /// connections safe to open from many calls at once. Use it in place of
    /// <c>AddInterceptor&lt;DseClientInterceptor&gt;()</c>. The connection step applies to the primary handler the
    /// client ends up with, whether <c>ConfigurePrimaryHttpMessageHandler</c> is called before or after this method.
    /// </summary>
    /// <remarks>
    /// <para>The gRPC client factory builds the client's channel on first use, and concurrent first calls may build
    /// several channels on the one pooled <see cref="SocketsHttpHandler"/>. Grpc.Net.Client (2.85) configures that
    /// handler while it builds a channel and reads it without a lock; a channel that reads the handler half configured
    /// keeps a transport that cannot open connections, and if that channel is the one the factory keeps, every call of
    /// the client fails with INTERNAL ("Specified method is not supported") for the life of the process
    /// (grpc/grpc-dotnet#1720). A DSE service fans calls out from its first requests, so it meets this race at
    /// start-up.</para>
    /// <para>This method gives the handler its own connect callback (a TCP connection with Nagle's algorithm off, which
    /// is what the handler does by default) before any channel sees it. Every channel then reads the same handler and
    /// leaves it alone: all of them connect the same way. What the client gives up is the channel's own view of
    /// connectivity (<c>GrpcChannel.State</c>) and client-side load balancing across the addresses of one name; a
    /// client that needs those should build its channel once, itself, and intercept it with the same singleton. A
    /// primary handler that already has a connect callback, or that is not a <see cref="SocketsHttpHandler"/>, is left
    /// as it is: neither meets the race.</para>
    /// </remarks>
    /// <returns>The builder.</returns>
    public static IHttpClientBuilder AddDseInterceptor(this IHttpClientBuilder builder)
    {
        ArgumentNullException.ThrowIfNull(builder);
        builder.Services.TryAddSingleton(DseServiceIdentity.ClientInterceptor);
        // A post-configure step runs after every ConfigurePrimaryHttpMessageHandler of the client, in any order.
        builder.Services.PostConfigure<HttpClientFactoryOptions>(builder.Name, options =>
            options.HttpMessageHandlerBuilderActions.Add(handlers => UseOwnConnectCallback(handlers.PrimaryHandler)));
        builder.AddInterceptor<DseClientInterceptor>();
        return builder;
    }

    /// <summary>Gives a <see cref="SocketsHttpHandler"/> without a connect callback the plain TCP one.</summary>
    private static void UseOwnConnectCallback(HttpMessageHandler handler)
    {
        if (handler is SocketsHttpHandler { ConnectCallback: null } sockets)
        {
            sockets.ConnectCallback = ConnectAsync;
        }
    }

    private static async ValueTask<Stream> ConnectAsync(SocketsHttpConnectionContext context, CancellationToken cancellationToken)
    {
        var socket = new Socket(SocketType.Stream, ProtocolType.Tcp) { NoDelay = true };
        try
        {
            await socket.ConnectAsync(context.DnsEndPoint, cancellationToken).ConfigureAwait(false);
            return new NetworkStream(socket, ownsSocket: true);
        }
        catch
        {
            socket.Dispose();
            throw;
        }
    }
}
