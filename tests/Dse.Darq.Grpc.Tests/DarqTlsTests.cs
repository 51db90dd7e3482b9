using System.Net;
using Dse.Darq.Grpc.V1;
using Microsoft.AspNetCore.Hosting;
using Dse.Testing;
using Grpc.Core;
using Grpc.Net.Client;
using Microsoft.AspNetCore.Builder;
using Microsoft.AspNetCore.Server.Kestrel.Core;
using Microsoft.Extensions.DependencyInjection;
using Microsoft.Extensions.Logging;

namespace Dse.Darq.Grpc.Tests;

/// <summary>
/// DARQ across servers over TLS: a destination DARQ served with a certificate of a private CA (made at test time), a
/// source whose <see cref="GrpcDarqDestinations"/> trusts that CA and nothing else.
/// </summary>
[Trait("Category", "Security")]
public sealed class DarqTlsTests : IDisposable
{
    private readonly TestCertificateAuthority _ca = TestCertificateAuthority.Create();

    public void Dispose() => _ca.Dispose();

    [Fact]
    public async Task Delivery_DestinationServedOverTls_ArrivesWhenTheSourceTrustsTheCa()
    {
        await using var darqB = await new TestStorage("b").OpenAsync();
        await using var server = await StartTlsAsync(darqB);
        using var destinations = new GrpcDarqDestinations(certificateAuthority: _ca.Authority).Add("b", server.Address);
        await using var darqA = await new TestStorage("a").OpenAsync(o => o.Destinations = destinations);
        var processor = await darqA.RegisterProcessorAsync();

        var step = await processor.StepAsync(new DarqStep().AddOut("b", "over tls".Bytes()));
        await darqA.CommitAsync();
        await darqA.WaitForDeliveredAsync(step.OutLsns[0]).AsTask().WaitAsync(TestText.Timeout);

        var processorB = await darqB.RegisterProcessorAsync();
        Assert.True(processorB.Messages.TryRead(out var message));
        Assert.Equal("over tls", message.Text());
    }

    [Fact]
    public async Task Call_ClientThatDoesNotTrustTheCa_FailsTheHandshake()
    {
        await using var darqB = await new TestStorage("b").OpenAsync();
        await using var server = await StartTlsAsync(darqB);
        using var channel = GrpcChannel.ForAddress(server.Address);
        var client = new DarqService.DarqServiceClient(channel);

        var error = await Assert.ThrowsAsync<RpcException>(() => client.DeliverBatchAsync(new DeliverBatchRequest { Darq = "b", Source = "x" }).ResponseAsync.WaitAsync(TestText.Timeout));

        // grpc-dotnet reports a failed TLS handshake as INTERNAL or UNAVAILABLE, with the SSL error as the cause.
        Assert.Contains(error.StatusCode, new[] { StatusCode.Internal, StatusCode.Unavailable });
        Assert.Contains("SSL", error.Status.Detail + error.Status.DebugException, StringComparison.Ordinal);
    }

    private async Task<Served> StartTlsAsync(Darq darq)
    {
        var registry = new DarqRegistry();
        registry.Add(darq);
        var builder = WebApplication.CreateSlimBuilder(new WebApplicationOptions { Args = [] });
        builder.Logging.ClearProviders();
        ListenOptions? endpoint = null;
        builder.WebHost.ConfigureKestrel(kestrel => kestrel.ListenDse(IPAddress.Loopback, 0, _ca.ServerCertificatePath, _ca.ServerKeyPath, listen => endpoint = listen));
        builder.Services.AddGrpc();
        builder.Services.AddSingleton<IDarqResolver>(registry);
        var app = builder.Build();
        app.MapDarqService();
        await app.StartAsync();
        return new Served(app, new Uri($"https://127.0.0.1:{((IPEndPoint)endpoint!.EndPoint).Port}"));
    }

    private sealed record Served(WebApplication App, Uri Address) : IAsyncDisposable
    {
        public async ValueTask DisposeAsync()
        {
            await App.StopAsync();
            await App.DisposeAsync();
        }
    }
}
