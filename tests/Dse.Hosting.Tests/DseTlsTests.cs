using System.Net;
using Dse.Coordinator;
using Dse.Testing;
using Microsoft.AspNetCore.Builder;
using Microsoft.AspNetCore.Hosting;
using Microsoft.AspNetCore.Server.Kestrel.Core;
using Microsoft.Extensions.DependencyInjection;
using Microsoft.Extensions.Hosting;
using Microsoft.Extensions.Logging;
using Microsoft.Extensions.Options;

namespace Dse.Hosting.Tests;

/// <summary>
/// Transport security in hosting: a gRPC endpoint served with <c>ListenDse</c> (TLS from PEM files, or plaintext on
/// loopback only, which it says at start) and a StateObject trusting a private CA through <c>Dse:CoordinatorCa</c>.
/// </summary>
[Trait("Category", "Security")]
public sealed class DseTlsTests : IDisposable
{
    private readonly TestCertificateAuthority _ca = TestCertificateAuthority.Create();

    public void Dispose() => _ca.Dispose();

    [Fact]
    public async Task CoordinatorCa_TlsCoordinatorServedWithListenDse_ConnectsAndCommits()
    {
        await using var coordinator = await StartCoordinatorAsync(_ca.ServerCertificatePath, _ca.ServerKeyPath);
        Assert.StartsWith("https://127.0.0.1:", coordinator.Address, StringComparison.Ordinal);
        await using var storage = new CounterStorage();
        using var host = await TestHost.BuildCounterAsync(storage, TestHost.Config(("Dse:Coordinator", coordinator.Address), ("Dse:CoordinatorCa", _ca.AuthorityPath)));
        var counter = await host.StartCounterAsync();

        long version = await counter.IncrementAndCommitAsync();

        Assert.True(coordinator.App.Services.GetRequiredService<CoordinatorServer>().Coordinator.State.CommittedVersion(1) >= version);
        await host.StopAsync();
    }

    [Fact]
    public async Task CoordinatorCa_WithHttpCoordinator_FailsTheStartNamingTheKey()
    {
        await using var storage = new CounterStorage();
        using var host = await TestHost.BuildCounterAsync(storage, TestHost.Config(("Dse:Coordinator", "http://127.0.0.1:1"), ("Dse:CoordinatorCa", _ca.AuthorityPath)));

        var error = await Assert.ThrowsAsync<OptionsValidationException>(() => host.StartAsync());

        Assert.Contains("Dse:CoordinatorCa applies to an https coordinator only", error.Message, StringComparison.Ordinal);
    }

    [Fact]
    public async Task CoordinatorCa_MissingFile_FailsTheStartNamingTheKey()
    {
        await using var storage = new CounterStorage();
        using var host = await TestHost.BuildCounterAsync(storage, TestHost.Config(("Dse:Coordinator", "https://127.0.0.1:1"), ("Dse:CoordinatorCa", Path.Combine(_ca.Directory, "none.pem"))));

        var error = await Assert.ThrowsAsync<OptionsValidationException>(() => host.StartAsync());

        Assert.Contains("Dse:CoordinatorCa names no file", error.Message, StringComparison.Ordinal);
    }

    [Fact]
    public void ListenDse_PlaintextOnANonLoopbackAddress_Refused()
    {
        var error = Assert.Throws<ArgumentException>(() => new KestrelServerOptions().ListenDse(IPAddress.Any, 0, null, null));

        Assert.Contains("0.0.0.0 is not a loopback address, and plaintext is for loopback development only", error.Message, StringComparison.Ordinal);
    }

    [Fact]
    public void ListenDse_KeyOfAnotherCertificate_RefusedWithoutTheKey()
    {
        using var other = TestCertificateAuthority.Create("another CA");

        var error = Assert.Throws<ArgumentException>(() => new KestrelServerOptions().ListenDse(IPAddress.Loopback, 0, _ca.ServerCertificatePath, other.ServerKeyPath));

        Assert.Contains("is not a usable PEM certificate and private key", error.Message, StringComparison.Ordinal);
        Assert.DoesNotContain(File.ReadAllLines(other.ServerKeyPath)[1], error.Message, StringComparison.Ordinal);
    }

    [Fact]
    public async Task ListenDse_PlaintextOnLoopback_LogsThatItIsForDevelopmentOnly()
    {
        await using var coordinator = await StartCoordinatorAsync(null, null);

        var warning = Assert.Single(coordinator.Logs.Entries, e => e.EventId.Id == 5010);
        Assert.Equal(LogLevel.Warning, warning.Level);
        Assert.Contains("plaintext is for loopback development only", warning.Message, StringComparison.Ordinal);
    }

    /// <summary>The coordinator service on 127.0.0.1, served by <c>ListenDse</c> with or without TLS.</summary>
    private static async Task<Served> StartCoordinatorAsync(string? certificatePath, string? keyPath)
    {
        var logs = new LogCapture();
        var builder = WebApplication.CreateSlimBuilder(new WebApplicationOptions { Args = [] });
        builder.Logging.ClearProviders();
        builder.Logging.AddProvider(logs);
        ListenOptions? endpoint = null;
        builder.WebHost.ConfigureKestrel(kestrel => kestrel.ListenDse(IPAddress.Loopback, 0, certificatePath, keyPath, listen => endpoint = listen));
        builder.Services.AddGrpc();
        var store = new InMemoryCoordinatorLogStore();
        builder.Services.AddDseCoordinator(_ => new InMemoryCoordinatorLog(store), options => options.HeartbeatTimeout = null);
        var app = builder.Build();
        app.MapDseCoordinator();
        await app.StartAsync();
        int port = ((IPEndPoint)endpoint!.EndPoint).Port;
        return new Served(app, logs, $"{(certificatePath is null ? "http" : "https")}://127.0.0.1:{port}");
    }

    private sealed record Served(WebApplication App, LogCapture Logs, string Address) : IAsyncDisposable
    {
        public async ValueTask DisposeAsync()
        {
            await App.StopAsync();
            await App.DisposeAsync();
            Logs.Dispose();
        }
    }
}
