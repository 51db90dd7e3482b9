using System.Collections.Concurrent;
using System.Security.Cryptography.X509Certificates;
using Dse.Coordinator.Client;
using Grpc.Net.Client;

namespace Dse.Darq.Grpc;

/// <summary>
/// Maps destination names of OUT messages to DARQs on other servers (<see cref="GrpcDarqDestination"/>), so that
/// <see cref="DarqOptions.Destinations"/> can deliver across processes; names it does not map go to an optional fallback
/// (for example a <see cref="DarqDestinationRegistry"/> of co-located DARQs). Channels it creates from addresses it owns
/// and disposes.
/// </summary>
public sealed class GrpcDarqDestinations : IDarqDestinations, IDisposable
{
    private readonly ConcurrentDictionary<string, IDarqDestination> _destinations = new(StringComparer.Ordinal);
    /// <summary>One channel per address; guarded by itself (creating a channel twice for one address would leak one).</summary>
    private readonly Dictionary<Uri, GrpcChannel> _channels = [];
    private readonly IDarqDestinations? _fallback;
    private readonly X509Certificate2? _certificateAuthority;
    private bool _disposed;

    /// <summary>Creates an empty map.</summary>
    /// <param name="fallback">Resolves the names this map does not hold; <see langword="null"/> for none.</param>
    /// <param name="certificateAuthority">
    /// For https addresses: the private CA the servers' certificates must chain to, and no other root
    /// (<see cref="TrustedCertificateAuthority"/>); <see langword="null"/> trusts what the machine trusts.
    /// </param>
    public GrpcDarqDestinations(IDarqDestinations? fallback = null, X509Certificate2? certificateAuthority = null)
    {
        _fallback = fallback;
        _certificateAuthority = certificateAuthority;
    }

    /// <summary>Sends OUT messages addressed to <paramref name="name"/> to the DARQ at <paramref name="address"/>, replacing any previous mapping.</summary>
    /// <param name="name">The destination name OUT messages carry.</param>
    /// <param name="address">The server's address (for example <c>http://10.0.0.5:5000</c>); one channel per address is shared.</param>
    /// <param name="remoteName">The DARQ's name on that server; <see langword="null"/> for <paramref name="name"/>.</param>
    /// <returns>This map.</returns>
    public GrpcDarqDestinations Add(string name, Uri address, string? remoteName = null)
    {
        ArgumentException.ThrowIfNullOrEmpty(name);
        ArgumentNullException.ThrowIfNull(address);
        if (!address.IsAbsoluteUri || (address.Scheme != Uri.UriSchemeHttp && address.Scheme != Uri.UriSchemeHttps))
        {
            throw new ArgumentException($"The address of destination '{name}' must be an absolute http or https URI (got '{address}').", nameof(address));
        }

        GrpcChannel channel;
        lock (_channels)
        {
            ObjectDisposedException.ThrowIf(_disposed, this);
            if (!_channels.TryGetValue(address, out channel!))
            {
                channel = _certificateAuthority is { } authority && address.Scheme == Uri.UriSchemeHttps
                    ? GrpcChannel.ForAddress(address, new GrpcChannelOptions { HttpHandler = TrustedCertificateAuthority.Apply(new SocketsHttpHandler { EnableMultipleHttp2Connections = true }, authority) })
                    : GrpcChannel.ForAddress(address);
                _channels.Add(address, channel);
            }
        }

        _destinations[name] = new GrpcDarqDestination(channel, remoteName ?? name);
        return this;
    }

    /// <summary>Sends OUT messages addressed to <paramref name="name"/> to <paramref name="destination"/>, replacing any previous mapping.</summary>
    /// <param name="name">The destination name.</param>
    /// <param name="destination">The destination (for example a <see cref="GrpcDarqDestination"/> over a channel the caller owns).</param>
    /// <returns>This map.</returns>
    public GrpcDarqDestinations Add(string name, IDarqDestination destination)
    {
        ArgumentException.ThrowIfNullOrEmpty(name);
        ArgumentNullException.ThrowIfNull(destination);
        _destinations[name] = destination;
        return this;
    }

    /// <summary>Removes a mapping; messages to it stay pending at their sources (or go to the fallback).</summary>
    /// <param name="name">The destination name.</param>
    /// <returns>Whether the name was mapped.</returns>
    public bool Remove(string name) => _destinations.TryRemove(name, out _);

    /// <inheritdoc />
    public IDarqDestination? Resolve(string name) =>
        _destinations.TryGetValue(name, out var destination) ? destination : _fallback?.Resolve(name);

    /// <summary>Disposes the channels this map created.</summary>
    public void Dispose()
    {
        lock (_channels)
        {
            _disposed = true;
            foreach (var channel in _channels.Values)
            {
                channel.Dispose();
            }

            _channels.Clear();
        }
    }
}
