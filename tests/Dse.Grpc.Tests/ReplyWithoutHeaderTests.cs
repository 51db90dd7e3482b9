using System.Diagnostics.Metrics;
using Dse.Grpc.Tests.Wire;
using Dse.Testing;
using Grpc.Core.Interceptors;
using Microsoft.AspNetCore.Builder;
using Microsoft.Extensions.Logging;

namespace Dse.Grpc.Tests;

/// <summary>
/// A call that carries a DSE header to a server without DSE comes back without one: the client interceptor warns once per
/// method and counts every such reply. Replies from DSE servers (a header, or the barrier trailer) are not reported.
/// </summary>
[Collection(MeterIsolation.Name)]
public sealed class ReplyWithoutHeaderTests : IAsyncLifetime
{
    private const int ReplyWithoutHeaderEvent = 1300;
    private const string AddMethod = "/dse.testing.v1.Relay/Add";

    private readonly RelayCluster _cluster = new();

    public Task InitializeAsync() => Task.CompletedTask;

    public async Task DisposeAsync() => await _cluster.DisposeAsync();

    [Fact]
    public async Task Add_ServerWithoutDse_WarnsOncePerMethodAndCountsEveryReply()
    {
        var caller = await _cluster.OpenAsync(1);
        await using var plain = await LoopbackGrpcServer.StartAsync(app => app.MapGrpcService<NoDseRelayService>());
        var logs = new LogCapture();
        var client = new Relay.RelayClient(plain.Channel.Intercept(new DseClientInterceptor(logs.CreateLogger<DseClientInterceptor>())));
        using var replies = new RepliesWithoutHeader(AddMethod);

        // Without a DSE context nothing is sent, so nothing is missing from the reply.
        Assert.Equal(7, (await client.AddAsync(new AddRequest { Amount = 7 })).Total);
        Assert.Equal(0, replies.Count);

        await caller.StartLocalActionAsync();
        using (DseCall.Use(caller.Detach()))
        {
            Assert.Equal(1, (await client.AddAsync(new AddRequest { Amount = 1 })).Total);
            Assert.Equal(2, (await client.AddAsync(new AddRequest { Amount = 2 })).Total);
        }

        var warning = Assert.Single(logs.Entries, e => e.EventId.Id == ReplyWithoutHeaderEvent);
        Assert.Equal(LogLevel.Warning, warning.Level);
        Assert.StartsWith($"{AddMethod} was called with a DSE header but replied without one", warning.Message, StringComparison.Ordinal);
        Assert.Equal(2, replies.Count);
    }

    [Fact]
    public async Task Add_SpeculativeAndNonSpeculativeDseServers_NothingReported()
    {
        // Every participant commits on its own: the non-speculative server's reply waits for all the caller observed.
        var period = TimeSpan.FromMilliseconds(5);
        var caller = await _cluster.OpenAsync(1, period);
        var speculative = await _cluster.ServeAsync(await _cluster.OpenAsync(2, period));
        var baseline = await _cluster.ServeAsync(await _cluster.OpenAsync(3, period, speculative: false));
        var logs = new LogCapture();
        var interceptor = new DseClientInterceptor(logs.CreateLogger<DseClientInterceptor>());
        using var replies = new RepliesWithoutHeader(AddMethod);

        await caller.StartLocalActionAsync();
        using (DseCall.Use(caller.Detach()))
        {
            await new Relay.RelayClient(speculative.Channel.Intercept(interceptor)).AddAsync(new AddRequest { Amount = 1 });
            using var call = new Relay.RelayClient(baseline.Channel.Intercept(interceptor)).AddAsync(new AddRequest { Amount = 1 });
            await call.ResponseAsync;

            // Released after a barrier: no header, and the trailer that says why.
            Assert.DoesNotContain(call.GetTrailers(), e => e.Key == DseMetadata.HeaderKey);
            Assert.Equal("1", call.GetTrailers().GetValue(DseMetadata.BarrierKey));
        }

        Assert.Equal(0, logs.Count(ReplyWithoutHeaderEvent));
        Assert.Equal(0, replies.Count);
    }

    /// <summary>Sums <c>dse.grpc.replies.without_header</c> for one method while it is alive.</summary>
    private sealed class RepliesWithoutHeader : IDisposable
    {
        private readonly MeterListener _listener = new();
        private long _count;

        public RepliesWithoutHeader(string method)
        {
            _listener.InstrumentPublished = (instrument, listener) =>
            {
                if (instrument.Meter.Name == DseGrpcInstrumentation.MeterName && instrument.Name == "dse.grpc.replies.without_header")
                {
                    listener.EnableMeasurementEvents(instrument);
                }
            };
            _listener.SetMeasurementEventCallback<long>((_, value, tags, _) =>
            {
                foreach (var tag in tags)
                {
                    if (tag.Key == "method" && (string?)tag.Value == method)
                    {
                        Interlocked.Add(ref _count, value);
                    }
                }
            });
            _listener.Start();
        }

        public long Count => Interlocked.Read(ref _count);

        public void Dispose() => _listener.Dispose();
    }
}
