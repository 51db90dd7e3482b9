using Dse.Grpc;
using Dse.Samples.TravelReservation;
using Dse.Samples.TravelReservation.Wire;
using Dse.Testing;
using Grpc.Core;
using Grpc.Core.Interceptors;
using Microsoft.AspNetCore.Builder;
using Microsoft.Extensions.DependencyInjection;

namespace Dse.Samples.Tests;

/// <summary>The reservation gRPC service on loopback behind the DSE server interceptor, on a store of three items of capacity two.</summary>
public class TravelReservationServiceTests
{
    private static readonly TimeSpan s_timeout = TimeSpan.FromSeconds(30);

    [Fact]
    public async Task ReserveCancelInspect_PlainCaller_IdempotentFullRefusedAndReleased()
    {
        await using var harness = new TravelReservationStoreHarness();
        var store = await harness.OpenAsync(groupCommit: TimeSpan.FromMilliseconds(5));
        await using var server = await ServeAsync(store, new HandlerSignal());
        var client = new Reservation.ReservationClient(server.Channel);

        var a = await client.ReserveAsync(new ReserveRequest { Item = "hotel-0", Trip = "trip-a", IdempotencyKey = "k1" });
        var aAgain = await client.ReserveAsync(new ReserveRequest { Item = "hotel-0", Trip = "trip-a", IdempotencyKey = "k2" });
        var b = await client.ReserveAsync(new ReserveRequest { Item = "hotel-0", Trip = "trip-b" });
        var c = await client.ReserveAsync(new ReserveRequest { Item = "hotel-0", Trip = "trip-c" });
        var released = await client.CancelAsync(new CancelRequest { Item = "hotel-0", Trip = "trip-a" });
        var releasedAgain = await client.CancelAsync(new CancelRequest { Item = "hotel-0", Trip = "trip-a" });
        var inspected = await client.InspectAsync(new InspectRequest());

        Assert.True(a.Reserved && aAgain.Reserved && b.Reserved);
        Assert.Equal(string.Empty, a.Reason);
        Assert.False(c.Reserved);
        Assert.Equal("full", c.Reason);
        Assert.True(released.Released);
        Assert.False(releasedAgain.Released);
        Assert.Equal("hotel", inspected.Service);
        Assert.Equal(["hotel-0", "hotel-1", "hotel-2"], inspected.Items.Select(i => i.Item));
        Assert.All(inspected.Items, i => Assert.Equal(2, i.Capacity));
        Assert.Equal(["trip-b"], inspected.Items[0].Holders);
    }

    [Fact]
    public async Task Reserve_WithADseHeader_AnsweredSpeculativelyWhileAPlainInspectWaitsForTheCommit()
    {
        // Versions advance only when the test says so: nothing commits unless it does.
        await using var harness = new TravelReservationStoreHarness();
        var store = await harness.OpenAsync();
        await TravelReservationStoreHarness.SettleAsync(store);
        var signal = new HandlerSignal();
        await using var server = await ServeAsync(store, signal);
        var client = new Reservation.ReservationClient(server.Channel);

        var headers = new Metadata();
        DseMetadata.SetHeader(headers, DseHeader.FromDependencies(store.Kv.WorldLine, []));
        using var speculative = client.ReserveAsync(new ReserveRequest { Item = "hotel-1", Trip = "trip-a" }, headers);
        var reserved = await speculative.ResponseAsync.WaitAsync(s_timeout);

        Assert.True(reserved.Reserved);
        Assert.True(DseMetadata.TryGetHeader(speculative.GetTrailers(), out _), "a reply to a DSE caller carries the service's header");

        var handled = signal.Next();
        using var plain = client.InspectAsync(new InspectRequest());
        await handled.WaitAsync(s_timeout);

        // The handler has run, but what it read (the uncommitted hold) is not recoverable yet: the reply waits.
        Assert.False(plain.ResponseAsync.IsCompleted);
        await TravelReservationStoreHarness.SettleAsync(store);
        var inspected = await plain.ResponseAsync.WaitAsync(s_timeout);
        Assert.Equal(["trip-a"], inspected.Items[1].Holders);
    }

    [Theory]
    [InlineData("", "trip-a", "item")]
    [InlineData("hotel-0", "", "trip")]
    [InlineData("hotel-7", "trip-a", "no item 'hotel-7'")]
    public async Task ReserveAndCancel_BadRequest_InvalidArgumentNamingWhatWasWrong(string item, string trip, string named)
    {
        await using var harness = new TravelReservationStoreHarness();
        var store = await harness.OpenAsync(groupCommit: TimeSpan.FromMilliseconds(5));
        await using var server = await ServeAsync(store, new HandlerSignal());
        var client = new Reservation.ReservationClient(server.Channel);

        var reserve = await Assert.ThrowsAsync<RpcException>(async () => await client.ReserveAsync(new ReserveRequest { Item = item, Trip = trip }));
        var cancel = await Assert.ThrowsAsync<RpcException>(async () => await client.CancelAsync(new CancelRequest { Item = item, Trip = trip }));

        Assert.Equal(StatusCode.InvalidArgument, reserve.StatusCode);
        Assert.Equal(StatusCode.InvalidArgument, cancel.StatusCode);
        Assert.Contains(named, reserve.Status.Detail, StringComparison.Ordinal);
        Assert.Contains("/dse.samples.travel.v1.Reservation/Cancel", cancel.Status.Detail, StringComparison.Ordinal);
        Assert.All((await client.InspectAsync(new InspectRequest())).Items, i => Assert.Empty(i.Holders));
    }

    private static Task<LoopbackGrpcServer> ServeAsync(ReservationStore store, HandlerSignal signal) =>
        LoopbackGrpcServer.StartAsync(app => app.MapGrpcService<ReservationService>(), services =>
        {
            services.AddSingleton(store);
            services.AddSingleton(signal);

            // The signal inside the DSE interceptor: it fires when the handler has returned, before the reply is released.
            services.AddGrpc().AddServiceOptions<ReservationService>(o =>
            {
                o.Interceptors.Add<DseServerInterceptor>(store.Kv);
                o.Interceptors.Add<HandlerSignal>();
            });
        });

    /// <summary>Completes the task <see cref="Next"/> returned once a handler has returned.</summary>
    private sealed class HandlerSignal : Interceptor
    {
        private TaskCompletionSource _handled = new(TaskCreationOptions.RunContinuationsAsynchronously);

        /// <summary>A task that completes when the next handler returns.</summary>
        public Task Next()
        {
            _handled = new TaskCompletionSource(TaskCreationOptions.RunContinuationsAsynchronously);
            return _handled.Task;
        }

        public override async Task<TResponse> UnaryServerHandler<TRequest, TResponse>(TRequest request, ServerCallContext context, UnaryServerMethod<TRequest, TResponse> continuation)
        {
            var response = await continuation(request, context);
            _handled.TrySetResult();
            return response;
        }
    }
}
