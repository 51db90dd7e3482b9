using System.Net;
using Dse.Coordinator;
using Dse.Grpc;
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
/// A hosted StateObject's identity at a coordinator with a participants file, over TLS: <c>Dse:CoordinatorToken</c> and
/// <c>Dse:CoordinatorTokenFile</c> are sent on every call, are checked at start, and never reach a log line.
/// </summary>
[Trait("Category", "Security")]
public sealed class DseIdentityTests : IDisposable
{
    private static readonly string Token = DseCredentials.CreateToken();
    private static readonly string OtherToken = DseCredentials.CreateToken();

    private readonly TestCertificateAuthority _ca = TestCertificateAuthority.Create();

    public void Dispose() => _ca.Dispose();

    [Fact]
    public async Task CoordinatorToken_TlsCoordinatorWithParticipantsFile_ConnectsAndCommitsWithoutLoggingTheToken()
    {
        await using var coordinator = await StartCoordinatorAsync();
        await using var storage = new CounterStorage();
        var logs = new LogCapture();
        using var host = await TestHost.BuildCounterAsync(storage, TestHost.Config(
            ("Dse:Coordinator", coordinator.Address), ("Dse:CoordinatorCa", _ca.AuthorityPath), ("Dse:CoordinatorToken", Token)), logs: logs);
        var counter = await host.StartCounterAsync();

        long version = await counter.IncrementAndCommitAsync();

        Assert.True(coordinator.App.Services.GetRequiredService<CoordinatorServer>().Coordinator.State.CommittedVersion(1) >= version);
        await host.StopAsync();
        Assert.DoesNotContain(coordinator.Logs.Entries, e => e.EventId.Id is 3212 or 3213);
        foreach (var entry in logs.Entries.Concat(coordinator.Logs.Entries))
        {
            Assert.DoesNotContain(Token, entry.ToString(), StringComparison.Ordinal);
        }
    }

    [Fact]
    public async Task CoordinatorTokenFile_AnotherParticipantsToken_NeverReadyPermissionDeniedWithoutTheToken()
    {
        await using var coordinator = await StartCoordinatorAsync();
        await using var storage = new CounterStorage();
        string tokenFile = Path.Combine(_ca.Directory, "token");
        await File.WriteAllTextAsync(tokenFile, OtherToken + "\n");
        var logs = new LogCapture();
        using var host = await TestHost.BuildCounterAsync(storage, TestHost.Config(
            ("Dse:Coordinator", coordinator.Address), ("Dse:CoordinatorCa", _ca.AuthorityPath), ("Dse:CoordinatorTokenFile", tokenFile)), logs: logs);

        await host.StartAsync();
        var error = await Assert.ThrowsAsync<InvalidOperationException>(() => host.Services.GetRequiredService<IDseReadiness>().WhenReadyAsync());
        await host.StopAsync();

        Assert.Contains("StateObject 1 cannot connect to coordinator", error.Message, StringComparison.Ordinal);
        Assert.Contains("refused ConnectAsync with PermissionDenied: Connect names participant 1, and the token authenticates participant 2", error.Message, StringComparison.Ordinal);
        Assert.DoesNotContain(OtherToken, error.ToString(), StringComparison.Ordinal);
        foreach (var entry in logs.Entries.Concat(coordinator.Logs.Entries))
        {
            Assert.DoesNotContain(OtherToken, entry.ToString(), StringComparison.Ordinal);
        }
    }

    [Theory]
    [InlineData("in-process", "Dse:CoordinatorToken", "x", "Dse:CoordinatorToken applies to a remote coordinator only")]
    [InlineData("https://127.0.0.1:1", "Dse:CoordinatorToken", "a b", "Dse:CoordinatorToken cannot be sent as a bearer token: it holds a space")]
    [InlineData("https://127.0.0.1:1", "Dse:CoordinatorTokenFile", "/nonexistent/token", "Dse:CoordinatorTokenFile: no file")]
    public async Task CoordinatorToken_Invalid_FailsTheStartNamingTheKey(string coordinator, string key, string value, string expected)
    {
        await using var storage = new CounterStorage();
        using var host = await TestHost.BuildCounterAsync(storage, TestHost.Config(("Dse:Coordinator", coordinator), (key, value)));

        var error = await Assert.ThrowsAsync<OptionsValidationException>(() => host.StartAsync());

        Assert.Contains(expected, error.Message, StringComparison.Ordinal);
    }

    /// <summary>The coordinator service with a participants file (participant 1, and participant 2 with the other token), TLS on 127.0.0.1.</summary>
    private async Task<Served> StartCoordinatorAsync()
    {
        string participants = Path.Combine(_ca.Directory, "participants");
        await File.WriteAllLinesAsync(participants, [$"participant 1 {DseCredentials.HashToken(Token)}", $"participant 2 {DseCredentials.HashToken(OtherToken)}"]);
        var logs = new LogCapture();
        var builder = WebApplication.CreateSlimBuilder(new WebApplicationOptions { Args = [] });
        builder.Logging.ClearProviders();
        builder.Logging.AddProvider(logs);
        ListenOptions? endpoint = null;
        builder.WebHost.ConfigureKestrel(kestrel => kestrel.ListenDse(IPAddress.Loopback, 0, _ca.ServerCertificatePath, _ca.ServerKeyPath, listen => endpoint = listen));
        var store = new InMemoryCoordinatorLogStore();
        builder.Services.AddDseCoordinator(_ => new InMemoryCoordinatorLog(store), options =>
        {
            options.HeartbeatTimeout = null;
            options.ParticipantsFile = participants;
        });
        var app = builder.Build();
        app.MapDseCoordinator();
        await app.StartAsync();
        return new Served(app, logs, $"https://127.0.0.1:{((IPEndPoint)endpoint!.EndPoint).Port}");
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
