using System.Diagnostics;
using Dse.Services.Grpc.V1;
using Google.Protobuf;
using Grpc.Core;
using Grpc.Net.Client;

namespace Dse.Benchmarks.Scenarios.Interceptor;

/// <summary>
/// The closed-loop load generator, the same for every server: <c>callers</c> tasks over a few HTTP/2 channels, each
/// issuing its next call as soon as the previous one returned, a 50/50 get/put mix over a small key space.
/// </summary>
internal sealed class KvLoad : IDisposable
{
    private const int Keys = 1024;
    private const int ValueBytes = 64;

    private readonly GrpcChannel[] _channels;
    private readonly ByteString[] _keys = new ByteString[Keys];
    private readonly ByteString _value;
    private readonly int _callers;
    private long _completed;

    public KvLoad(Uri address, int channels, int callers)
    {
        _callers = callers;
        _channels = new GrpcChannel[channels];
        for (int i = 0; i < channels; i++)
        {
            // One connection per channel: Kestrel allows every caller's stream on it.
            _channels[i] = GrpcChannel.ForAddress(address, new GrpcChannelOptions { HttpHandler = new SocketsHttpHandler { EnableMultipleHttp2Connections = false } });
        }

        for (int i = 0; i < Keys; i++)
        {
            _keys[i] = ByteString.CopyFromUtf8($"key-{i:D5}");
        }

        var value = new byte[ValueBytes];
        new Random(7).NextBytes(value);
        _value = ByteString.CopyFrom(value);
    }

    /// <summary>Writes every key once, so gets find values; <paramref name="messageHeader"/> goes in every request's <c>dse_header</c>.</summary>
    public async Task PopulateAsync(CallOptions options, ByteString messageHeader)
    {
        var client = new KeyValueService.KeyValueServiceClient(_channels[0]);
        for (int i = 0; i < Keys; i++)
        {
            await client.PutAsync(new PutRequest { Key = _keys[i], Value = _value, DseHeader = messageHeader }, options).ConfigureAwait(false);
        }
    }

    /// <summary>
    /// Runs the load for <paramref name="warmup"/>, then counts completed calls over <paramref name="window"/>; returns
    /// calls/s and this process's CPU time per call (clients and server together), which other processes on a shared
    /// machine disturb far less than throughput.
    /// </summary>
    /// <exception cref="RpcException">A call failed: the measurement is void. Thrown as soon as the other callers' calls in flight have returned.</exception>
    public async Task<(double PerSecond, double CpuMicrosecondsPerCall)> RunAsync(CallOptions options, ByteString messageHeader, TimeSpan warmup, TimeSpan window, CancellationToken cancellationToken)
    {
        using var stop = CancellationTokenSource.CreateLinkedTokenSource(cancellationToken);
        var workers = new Task[_callers];
        for (int i = 0; i < _callers; i++)
        {
            var client = new KeyValueService.KeyValueServiceClient(_channels[i % _channels.Length]);
            workers[i] = Task.Run(() => CallerAsync(client, options, messageHeader, seed: i + 1, stop.Token), CancellationToken.None);
        }

        // Callers return only once stopped, so this completes early only when one fails: the run ends there, and the
        // finally block rethrows that caller's exception.
        var firstFailure = Task.WhenAny(workers);
        double perSecond = double.NaN;
        double cpuPerCall = double.NaN;
        try
        {
            if (await Task.WhenAny(Task.Delay(warmup, cancellationToken), firstFailure).ConfigureAwait(false) == firstFailure)
            {
                return (perSecond, cpuPerCall);
            }

            using var process = Process.GetCurrentProcess();
            long before = Volatile.Read(ref _completed);
            var cpuBefore = process.TotalProcessorTime;
            long started = Stopwatch.GetTimestamp();
            if (await Task.WhenAny(Task.Delay(window, cancellationToken), firstFailure).ConfigureAwait(false) == firstFailure)
            {
                return (perSecond, cpuPerCall);
            }

            cancellationToken.ThrowIfCancellationRequested();
            long after = Volatile.Read(ref _completed);
            var elapsed = Stopwatch.GetElapsedTime(started);
            process.Refresh();
            var cpu = process.TotalProcessorTime - cpuBefore;
            perSecond = (after - before) / elapsed.TotalSeconds;
            cpuPerCall = after > before ? cpu.TotalMicroseconds / (after - before) : double.NaN;
        }
        finally
        {
            await stop.CancelAsync().ConfigureAwait(false);
            await Task.WhenAll(workers).ConfigureAwait(false);
        }

        return (perSecond, cpuPerCall);
    }

    public void Dispose()
    {
        foreach (var channel in _channels)
        {
            channel.Dispose();
        }
    }

    /// <summary>One caller: calls back to back until stopped; in-flight calls finish (they are not cancelled).</summary>
    private async Task CallerAsync(KeyValueService.KeyValueServiceClient client, CallOptions options, ByteString messageHeader, int seed, CancellationToken stop)
    {
        var random = new Random(seed);
        while (!stop.IsCancellationRequested)
        {
            var key = _keys[random.Next(Keys)];
            if (random.Next(2) == 0)
            {
                await client.GetAsync(new GetRequest { Key = key, DseHeader = messageHeader }, options).ConfigureAwait(false);
            }
            else
            {
                await client.PutAsync(new PutRequest { Key = key, Value = _value, DseHeader = messageHeader }, options).ConfigureAwait(false);
            }

            Interlocked.Increment(ref _completed);
        }
    }
}
