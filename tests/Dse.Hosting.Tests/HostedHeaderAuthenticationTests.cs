using Dse.Grpc;
using Dse.Storage;
using Dse.Testing;
using Dse.Testing.Wire;
using Grpc.Core;
using Grpc.Core.Interceptors;
using Grpc.Net.Client;
using Microsoft.AspNetCore.Builder;
using Microsoft.Extensions.DependencyInjection;
using Microsoft.Extensions.Options;

namespace Dse.Hosting.Tests;

/// <summary>
/// Hosted speculative services with <c>Dse:Participants</c> accept a DSE header only from an authenticated participant;
/// a hosted caller authenticates with <c>Dse:Token</c>, which hosting's client interceptor sends; the keys are checked
/// at start, and no token reaches a log line or an error message.
/// </summary>
[Trait("Category", "Security")]
public sealed class HostedHeaderAuthenticationTests : IAsyncLifetime
{
    private static readonly string FrontToken = DseCredentials.CreateToken();
    private static readonly string BackToken = DseCredentials.CreateToken();

    private readonly ClusterCoordinator _coordinator = new();
    private readonly string _directory = Directory.CreateTempSubdirectory("dse-header-auth-").FullName;
    private readonly List<IAsyncDisposable> _owned = [];

    public Task InitializeAsync() => Task.CompletedTask;

    public async Task DisposeAsync()
    {
        for (int i = _owned.Count - 1; i >= 0; i--)
        {
            await _owned[i].DisposeAsync();
        }

        await _coordinator.DisposeAsync();
        Directory.Delete(_directory, recursive: true);
    }

    [Fact]
    public async Task FrontCallsBack_FrontHasDseToken_BackAcceptsItsHeaderAndNoTokenIsLogged()
    {
        var back = await StartBackAsync();
        var front = await StartFrontAsync(back, token: FrontToken);

        var reply = await new Front.FrontClient(front.Channel).AddAsync(new AddRequest { Amount = 3 });

        Assert.Equal(3, reply.Total);
        Assert.Equal(3, back.Services.GetRequiredService<CounterStateObject>().Value);
        Assert.True(back.Logs.Contains(5012));
        Assert.False(back.Logs.Contains(1301) || back.Logs.Contains(1302));
        AssertNoToken(back, front);
    }

    [Fact]
    public async Task FrontCallsBack_FrontHasNoToken_UnauthenticatedAndBackUnchanged()
    {
        var back = await StartBackAsync();
        var front = await StartFrontAsync(back, token: null);

        var error = await Assert.ThrowsAsync<RpcException>(() => new Front.FrontClient(front.Channel).AddAsync(new AddRequest { Amount = 3 }).ResponseAsync);

        Assert.Equal(StatusCode.Unauthenticated, error.StatusCode);
        Assert.Contains("/dse.testing.v1.Back/Add: a DSE header is accepted only from an authenticated participant", error.Status.Detail, StringComparison.Ordinal);
        Assert.Equal(0, back.Services.GetRequiredService<CounterStateObject>().Value);
        Assert.True(back.Logs.Contains(1301));
        AssertNoToken(back, front);
        Assert.DoesNotContain(FrontToken, error.ToString(), StringComparison.Ordinal);
    }

    [Fact]
    public async Task PlainCallToBack_NoHeaderNoToken_Served()
    {
        var back = await StartBackAsync();

        var reply = await new Back.BackClient(back.Channel).AddAsync(new AddRequest { Amount = 2 });

        Assert.Equal(2, reply.Total);
    }

    [Theory]
    [InlineData("missing", "Dse:Participants names no file")]
    [InlineData("malformed", "Dse:Participants: ")]
    [InlineData("opt-in-alone", "Dse:AcceptUnauthenticatedHeaders applies only with Dse:Participants")]
    [InlineData("token-with-space", "Dse:Token cannot be sent as a bearer token: it holds a space")]
    [InlineData("token-and-file", "Set Dse:Token or Dse:TokenFile, not both.")]
    [InlineData("token-file-missing", "Dse:TokenFile: no file")]
    public async Task ServiceIdentityKeys_Invalid_FailTheStartNamingTheKeyNeverTheSecret(string case_, string expected)
    {
        string secretLine = $"participant 1 {DseCredentials.HashToken(FrontToken)} trailing";
        string malformed = Path.Combine(_directory, "malformed");
        await File.WriteAllTextAsync(malformed, secretLine + "\n");
        var config = case_ switch
        {
            "missing" => TestHost.Config(("Dse:Participants", Path.Combine(_directory, "none"))),
            "malformed" => TestHost.Config(("Dse:Participants", malformed)),
            "opt-in-alone" => TestHost.Config(("Dse:AcceptUnauthenticatedHeaders", "true")),
            "token-with-space" => TestHost.Config(("Dse:Token", "a " + FrontToken)),
            "token-and-file" => TestHost.Config(("Dse:Token", FrontToken), ("Dse:TokenFile", malformed)),
            _ => TestHost.Config(("Dse:TokenFile", Path.Combine(_directory, "none"))),
        };
        await using var storage = new CounterStorage();
        using var host = await TestHost.BuildCounterAsync(storage, config);

        var error = await Assert.ThrowsAsync<OptionsValidationException>(() => host.StartAsync());

        Assert.Contains(expected, error.Message, StringComparison.Ordinal);
        Assert.DoesNotContain(FrontToken, error.Message, StringComparison.Ordinal);
        Assert.DoesNotContain(DseCredentials.HashToken(FrontToken), error.Message, StringComparison.Ordinal);
    }

    /// <summary>Back (StateObject 2) with a participants file listing Front (1) and Back (2).</summary>
    private async Task<LoopbackGrpcServer> StartBackAsync()
    {
        string participants = Path.Combine(_directory, "participants");
        await File.WriteAllLinesAsync(participants, [$"participant 1 {DseCredentials.HashToken(FrontToken)}", $"participant 2 {DseCredentials.HashToken(BackToken)}"]);
        return await StartAsync(2, app => app.MapGrpcService<CounterBackService>(), services => { }, options => options.Participants = participants);
    }

    /// <summary>Front (StateObject 1), whose handler calls Back through hosting's client interceptor, sending <paramref name="token"/> as Dse:Token.</summary>
    private async Task<LoopbackGrpcServer> StartFrontAsync(LoopbackGrpcServer back, string? token)
    {
        var channel = GrpcChannel.ForAddress(back.Address);
        _owned.Add(new ChannelOwner(channel));
        return await StartAsync(
            1,
            app => app.MapGrpcService<CounterFrontService>(),
            services => services.AddSingleton(provider => new Back.BackClient(channel.Intercept(provider.GetRequiredService<DseClientInterceptor>()))),
            options => options.Token = token);
    }

    private async Task<LoopbackGrpcServer> StartAsync(long id, Action<WebApplication> map, Action<IServiceCollection> configure, Action<DseHostingOptions> options)
    {
        var log = await SnapshotLog.OpenAsync(DseDevices.CreateInMemory(), new SnapshotLogOptions { OwnsDevice = true });
        var server = await LoopbackGrpcServer.StartAsync(map, services =>
        {
            configure(services);
            services
                .AddDse(o =>
                {
                    o.ObjectId = id;
                    o.GroupCommitPeriod = TimeSpan.FromMilliseconds(5);
                    o.ShutdownTimeout = TimeSpan.Zero;
                    options(o);
                })
                .UseCoordinator(_coordinator)
                .AddStateObject((_, o) => new CounterStateObject(o, log))
                .AddGrpcInterceptors<CounterStateObject>();
        });
        _owned.Add(server);
        await server.Services.GetRequiredService<IDseReadiness>().WhenReadyAsync();
        return server;
    }

    private static void AssertNoToken(params LoopbackGrpcServer[] servers)
    {
        foreach (var entry in servers.SelectMany(static s => s.Logs.Entries))
        {
            string line = entry.ToString();
            Assert.DoesNotContain(FrontToken, line, StringComparison.Ordinal);
            Assert.DoesNotContain(BackToken, line, StringComparison.Ordinal);
            Assert.DoesNotContain(DseCredentials.HashToken(FrontToken)[7..], line, StringComparison.Ordinal);
        }
    }

    private sealed class ChannelOwner(GrpcChannel channel) : IAsyncDisposable
    {
        public ValueTask DisposeAsync()
        {
            channel.Dispose();
            return ValueTask.CompletedTask;
        }
    }
}
