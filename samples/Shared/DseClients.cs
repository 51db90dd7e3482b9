using System.Security.Cryptography.X509Certificates;
using Dse.Grpc;
using Grpc.Core;
using Grpc.Core.Interceptors;
using Grpc.Net.Client;

namespace Dse.Samples.Shared;

/// <summary>
/// A server's clients of other services of its cluster, one per address. Calls go through <see cref="DseClientInterceptor"/>,
/// so a call made inside a handler (or a workflow step) carries the caller's state and receives the callee's reply
/// header into it.
/// </summary>
/// <typeparam name="TClient">The generated client type.</typeparam>
internal sealed class DseClients<TClient> : IDisposable
    where TClient : ClientBase<TClient>
{
    private readonly GrpcChannel[] _channels;

    /// <summary>Connects to <paramref name="addresses"/> (TLS trusting <paramref name="authority"/> when given) through <paramref name="interceptor"/>.</summary>
    public DseClients(IReadOnlyList<Uri> addresses, X509Certificate2? authority, DseClientInterceptor interceptor, Func<CallInvoker, TClient> create)
    {
        ArgumentNullException.ThrowIfNull(addresses);
        ArgumentNullException.ThrowIfNull(interceptor);
        ArgumentNullException.ThrowIfNull(create);
        _channels = new GrpcChannel[addresses.Count];
        Clients = new TClient[addresses.Count];
        for (int i = 0; i < addresses.Count; i++)
        {
            _channels[i] = Channels.Create(addresses[i], authority);
            Clients[i] = create(_channels[i].Intercept(interceptor));
        }
    }

    /// <summary>One client per address, in the order given.</summary>
    public TClient[] Clients { get; }

    /// <inheritdoc />
    public void Dispose()
    {
        foreach (var channel in _channels)
        {
            channel.Dispose();
        }
    }
}
