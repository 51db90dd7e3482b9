using System.Net;
using System.Net.Sockets;

namespace Dse.Coordinator.Tests.Infrastructure;

/// <summary>
/// A TCP listener on 127.0.0.1 that is not a coordinator: it accepts connections and either never answers (a paused or
/// overloaded coordinator) or resets them at once (a crashed one). Holds its port for its whole life, so no other
/// process can take it meanwhile.
/// </summary>
public sealed class RawTcpServer : IDisposable
{
    private readonly TcpListener _listener;
    private readonly bool _reset;
    private readonly List<Socket> _held = [];
    private readonly TaskCompletionSource _accepted = new(TaskCreationOptions.RunContinuationsAsynchronously);

    // Ends when the listener stops.
    private readonly Task _accepting;

    private RawTcpServer(bool reset)
    {
        _reset = reset;
        _listener = new TcpListener(IPAddress.Loopback, 0);
        _listener.Start();
        Address = new Uri($"http://127.0.0.1:{((IPEndPoint)_listener.LocalEndpoint).Port}");
        _accepting = AcceptAsync();
    }

    public Uri Address { get; }

    /// <summary>Completes once the first connection was accepted.</summary>
    public Task FirstAccepted => _accepted.Task;

    /// <summary>Accepts and holds every connection without reading or writing a byte.</summary>
    public static RawTcpServer Silent() => new(reset: false);

    /// <summary>Accepts every connection and resets it (RST) at once.</summary>
    public static RawTcpServer Resetting() => new(reset: true);

    public void Dispose()
    {
        _listener.Stop();
        lock (_held)
        {
            foreach (var socket in _held)
            {
                socket.Dispose();
            }
        }
    }

    private async Task AcceptAsync()
    {
        while (true)
        {
            Socket socket;
            try
            {
                socket = await _listener.AcceptSocketAsync();
            }
            catch (Exception ex) when (ex is SocketException or ObjectDisposedException)
            {
                return;
            }

            if (_reset)
            {
                // Linger 0: closing sends RST instead of FIN.
                socket.LingerState = new LingerOption(true, 0);
                socket.Dispose();
            }
            else
            {
                lock (_held)
                {
                    _held.Add(socket);
                }
            }

            _accepted.TrySetResult();
        }
    }
}
