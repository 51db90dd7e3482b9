using System.Net;
using Dse.Storage;
using Dse.Testing;
using Microsoft.AspNetCore.Builder;
using Microsoft.Extensions.DependencyInjection;
using Microsoft.Extensions.Options;

namespace Dse.Darq.Grpc.Tests;

public sealed class DarqHostingTests
{
    [Fact]
    public async Task AddDarq_HostStartAndStop_OpensServesDeliversAndCloses()
    {
        var server = await StartAsync(services =>
        {
            services.AddDarq("orders", options => InMemory(options));
            services.AddDarq("billing", options => InMemory(options));
        });
        Darq orders;
        Darq billing;
        await using (server)
        {
            var resolver = server.Services.GetRequiredService<IDarqResolver>();
            orders = Assert.IsType<Darq>(resolver.Resolve("orders"));
            billing = Assert.IsType<Darq>(resolver.Resolve("billing"));
            Assert.Equal("orders", orders.Name);
            var billed = await billing.RegisterProcessorAsync();

            await new RemoteDarqProducer(server.Channel, "orders", producerId: 1).EnqueueAsync("order-1".Bytes());
            using var processor = await RemoteDarqProcessor.RegisterAsync(server.Channel, "orders");
            await using var messages = processor.ReadAllAsync().GetAsyncEnumerator();
            var order = (await messages.TakeAsync(1))[0];
            var step = await processor.StepAsync(new DarqStep().Consume(order).AddOut("billing", "bill-1".Bytes()), waitDurable: true);

            // The host's DARQs deliver to each other in process.
            await orders.WaitForDeliveredAsync(step.OutLsns[0]).AsTask().WaitAsync(TestText.Timeout);
            Assert.True(billed.Messages.TryRead(out var bill));
            Assert.Equal("bill-1", bill.Text());

            await server.StopAsync();
            Assert.Null(resolver.Resolve("orders"));
            Assert.Null(resolver.Resolve("billing"));
        }

        await Assert.ThrowsAsync<ObjectDisposedException>(() => orders.CommitAsync().AsTask());
        await Assert.ThrowsAsync<ObjectDisposedException>(() => billing.CommitAsync().AsTask());
    }

    [Fact]
    public async Task AddRemoteDestination_TwoHosts_DeliversOutMessagesOverGrpc()
    {
        var billingHost = await StartAsync(services => services.AddDarq("billing", options => InMemory(options)));
        await using (billingHost)
        {
            var ordersHost = await StartAsync(services =>
                services.AddDarq("orders", options => InMemory(options)).AddRemoteDestination("invoices", billingHost.Address, remoteName: "billing"));
            await using (ordersHost)
            {
                var billing = billingHost.Services.GetRequiredService<IDarqResolver>().Resolve("billing")!;
                var orders = ordersHost.Services.GetRequiredService<IDarqResolver>().Resolve("orders")!;
                var billed = await billing.RegisterProcessorAsync();
                var processor = await orders.RegisterProcessorAsync();
                await orders.EnqueueAsync("order-1".Bytes());
                Assert.True(processor.Messages.TryRead(out var order));

                var step = await processor.StepAsync(new DarqStep().Consume(order).AddOut("invoices", "bill-1".Bytes()));
                await orders.CommitAsync();
                await orders.WaitForDeliveredAsync(step.OutLsns[0]).AsTask().WaitAsync(TestText.Timeout);

                Assert.True(billed.Messages.TryRead(out var bill));
                Assert.Equal("bill-1", bill.Text());
                Assert.False(billed.Messages.TryRead(out _));
            }
        }
    }

    [Fact]
    public async Task AddDarq_WithoutDevices_FailsTheStartNamingTheDarqAndOption()
    {
        await using var server = LoopbackGrpcServer.Create(
            app => app.MapDarqService(),
            services => services.AddDarq("orders", options => options.LogDevice = DseDevices.CreateInMemory()));

        var error = await Assert.ThrowsAsync<OptionsValidationException>(() => server.StartAsync());

        Assert.Contains("DARQ 'orders': DarqOptions.CommitDevice is required", error.Message, StringComparison.Ordinal);
        Assert.Null(server.Services.GetRequiredService<IDarqResolver>().Resolve("orders"));
    }

    [Fact]
    [Trait("Category", "Recovery")]
    public async Task AddDarq_CorruptCommittedEntry_FailsTheStartNamingTheDarq()
    {
        var storage = new TestStorage("orders");
        await using (var darq = await storage.OpenAsync())
        {
            await darq.EnqueueAsync("a-perfectly-good-payload".Bytes());
            await darq.CommitAsync();
        }

        storage.CorruptPayload("perfectly-good");
        await using var server = LoopbackGrpcServer.Create(app => app.MapDarqService(), services => services.AddDarq("orders", options =>
        {
            var stored = storage.Options();
            (options.LogDevice, options.CommitDevice) = (stored.LogDevice, stored.CommitDevice);
            (options.PageSize, options.MemorySize, options.SegmentSize) = (stored.PageSize, stored.MemorySize, stored.SegmentSize);
            (options.MaxMessageSize, options.MaxProducers) = (stored.MaxMessageSize, stored.MaxProducers);
        }));

        var error = await Assert.ThrowsAsync<InvalidOperationException>(() => server.StartAsync());

        Assert.StartsWith("DARQ 'orders' could not open:", error.Message, StringComparison.Ordinal);
        Assert.IsType<InvalidDataException>(error.InnerException);
        Assert.Null(server.Services.GetRequiredService<IDarqResolver>().Resolve("orders"));
    }

    [Fact]
    public async Task AddDarq_WebServerFailsToStartAfterDarqsOpened_DisposingTheHostClosesThem()
    {
        // The port is taken, so Kestrel fails to start after the DARQ hosted service opened the DARQs.
        using var taken = new System.Net.Sockets.TcpListener(IPAddress.Loopback, 0);
        taken.Start();
        int port = ((IPEndPoint)taken.LocalEndpoint).Port;
        var server = LoopbackGrpcServer.Create(app => app.MapDarqService(), services => services.AddDarq("orders", options => InMemory(options)), port);
        var resolver = server.Services.GetRequiredService<IDarqResolver>();

        await Assert.ThrowsAsync<IOException>(() => server.StartAsync());
        var orders = resolver.Resolve("orders");
        await server.DisposeAsync();

        // The host never stops a service whose start it abandoned: disposing it must close what was opened.
        Assert.NotNull(orders);
        await Assert.ThrowsAsync<ObjectDisposedException>(() => orders.CommitAsync().AsTask());
        Assert.Null(resolver.Resolve("orders"));
    }

    [Fact]
    public void AddDarq_SameNameTwice_RegistersOneDarqWithBothCallbacks()
    {
        var services = new ServiceCollection();
        services.AddLogging();
        services.AddDarq("orders", options => InMemory(options));
        var builder = services.AddDarq("orders", options => options.MaxProducers = 3);

        using var provider = services.BuildServiceProvider();
        var options = provider.GetRequiredService<IOptionsMonitor<DarqOptions>>().Get("orders");

        Assert.Equal("orders", builder.Name);
        Assert.Equal("orders", options.Name);
        Assert.Equal(3, options.MaxProducers);
        Assert.NotNull(options.LogDevice);
        Assert.Single(provider.GetServices<Microsoft.Extensions.Hosting.IHostedService>());
    }

    [Fact]
    public void AddRemoteDestination_RelativeAddress_IsRefusedNamingIt()
    {
        var builder = new ServiceCollection().AddDarq("orders", options => InMemory(options));

        var error = Assert.Throws<ArgumentException>(() => builder.AddRemoteDestination("billing", new Uri("/billing", UriKind.Relative)));

        Assert.Contains("'billing'", error.Message, StringComparison.Ordinal);
    }

    private static void InMemory(DarqOptions options)
    {
        options.LogDevice = DseDevices.CreateInMemory();
        options.CommitDevice = DseDevices.CreateInMemory();
        options.PageSize = TestStorage.PageSize;
        options.MemorySize = 4 * TestStorage.PageSize;
        options.SegmentSize = 2 * TestStorage.PageSize;
        options.MaxMessageSize = TestStorage.MaxMessageSize;
        options.DeliveryRetryMaxDelay = TimeSpan.FromMilliseconds(100);
    }

    private static Task<LoopbackGrpcServer> StartAsync(Action<IServiceCollection> configure) =>
        LoopbackGrpcServer.StartAsync(app => app.MapDarqService(), configure);
}
