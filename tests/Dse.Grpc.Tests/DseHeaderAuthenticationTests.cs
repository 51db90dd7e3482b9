using System.Diagnostics.Metrics;
using Dse.Grpc.Tests.Wire;
using Dse.Testing;
using Grpc.Core;
using Grpc.Core.Interceptors;
using Microsoft.Extensions.Logging;

namespace Dse.Grpc.Tests;

/// <summary>
/// With a participants file, a speculative service accepts a DSE header only from an authenticated participant, through
/// the interceptor and in manual mode alike: a refused call never runs its handler and changes nothing, and no token or
/// hash reaches a log line or an error message. Calls without a header need no token.
/// </summary>
[Trait("Category", "Security")]
[Collection(MeterIsolation.Name)]
public sealed class DseHeaderAuthenticationTests : IAsyncLifetime
{
    private const string AddMethod = "/dse.testing.v1.Relay/Add";

    private static readonly string CallerToken = DseCredentials.CreateToken();
    private static readonly string ServerToken = DseCredentials.CreateToken();
    private static readonly string OperatorToken = DseCredentials.CreateToken();
    private static readonly string UnlistedToken = DseCredentials.CreateToken();

    private readonly RelayCluster _cluster = new();
    private readonly LogCapture _logs = new();
    private readonly List<string> _errors = [];

    public Task InitializeAsync() => Task.CompletedTask;

    public async Task DisposeAsync()
    {
        await _cluster.DisposeAsync();
        _logs.Dispose();
    }

    [Theory]
    [InlineData(false)]
    [InlineData(true)]
    public async Task Add_HeaderWithoutToken_UnauthenticatedAndHandlerNeverRuns(bool manual)
    {
        var (caller, server, counter) = await StartAsync(manual);
        using var refused = new RefusedHeaders();

        var error = await AddRefusedAsync(server, OriginOf(caller), StatusCode.Unauthenticated);

        Assert.Contains("a DSE header is accepted only from an authenticated participant, and the call carries no credential", error.Status.Detail, StringComparison.Ordinal);
        AssertNothingRan(server, counter);
        Assert.Equal(1, refused.Count("Unauthenticated"));
        Assert.Contains(_logs.Entries, e => e.EventId.Id == 1301 && e.Level == LogLevel.Information && e.Message.Contains(AddMethod, StringComparison.Ordinal));
        AssertNoSecrets(server);
    }

    [Theory]
    [InlineData(false)]
    [InlineData(true)]
    public async Task Add_UnlistedToken_UnauthenticatedAndHandlerNeverRuns(bool manual)
    {
        var (caller, server, counter) = await StartAsync(manual);

        var error = await AddRefusedAsync(server, OriginOf(caller, UnlistedToken), StatusCode.Unauthenticated);

        Assert.Contains("the bearer token is not listed in the participants file", error.Status.Detail, StringComparison.Ordinal);
        AssertNothingRan(server, counter);
        AssertNoSecrets(server);
    }

    [Theory]
    [InlineData(false)]
    [InlineData(true)]
    public async Task Add_OriginNamingAnotherParticipant_PermissionDeniedAndHandlerNeverRuns(bool manual)
    {
        var (caller, server, counter) = await StartAsync(manual);
        using var refused = new RefusedHeaders();

        // The server's own token (participant 2) sends a header whose origin is participant 1.
        var error = await AddRefusedAsync(server, OriginOf(caller, ServerToken), StatusCode.PermissionDenied);

        Assert.Equal($"{AddMethod}: the DSE header's origin is participant 1, and the token authenticates participant 2.", error.Status.Detail);
        AssertNothingRan(server, counter);
        Assert.Equal(1, refused.Count("PermissionDenied"));
        Assert.Contains(_logs.Entries, e => e.EventId.Id == 1302 && e.Level == LogLevel.Warning);
        AssertNoSecrets(server);
    }

    [Fact]
    public async Task Add_DependencySetWithOperatorToken_PermissionDenied()
    {
        var (_, server, counter) = await StartAsync(manual: false);

        var error = await AddRefusedAsync(server, Headers(DseHeader.FromDependencies(0, []), OperatorToken), StatusCode.PermissionDenied);

        Assert.Contains("the token authenticates operator ops, and an operator speaks for no participant", error.Status.Detail, StringComparison.Ordinal);
        AssertNothingRan(server, counter);
        AssertNoSecrets(server);
    }

    [Theory]
    [InlineData(false)]
    [InlineData(true)]
    public async Task Add_OriginWithItsParticipantsToken_RunsAndRepliesWithHeader(bool manual)
    {
        var (caller, server, counter) = await StartAsync(manual);

        using var call = server.PlainClient().AddAsync(new AddRequest { Amount = 5 }, OriginOf(caller, CallerToken));
        var reply = await call.ResponseAsync;

        Assert.Equal(5, reply.Total);
        Assert.Equal(5, counter.Value);
        Assert.True(DseMetadata.TryGetHeader(call.GetTrailers(), out var header));
        Assert.Equal(counter.Id, header.Origin.ObjectId);
        AssertNoSecrets(server);
    }

    [Fact]
    public async Task Add_ClientInterceptorWithToken_SthreadHeaderAccepted()
    {
        var (caller, server, counter) = await StartAsync(manual: false);
        var client = new Relay.RelayClient(server.Channel.Intercept(new DseClientInterceptor(_logs.CreateLogger<DseClientInterceptor>(), CallerToken)));

        await caller.StartLocalActionAsync();
        var sthread = caller.Detach();
        using (DseCall.Use(sthread))
        {
            var reply = await client.AddAsync(new AddRequest { Amount = 2 });
            Assert.Equal(2, reply.Total);
        }

        Assert.Equal(DseHeaderKind.DependencySet, Assert.Single(server.Node.Seen).Kind);
        AssertNoSecrets(server);
    }

    [Theory]
    [InlineData(false)]
    [InlineData(true)]
    public async Task Add_NoHeaderNoToken_RunsAfterItsBarrier(bool manual)
    {
        var (_, server, counter) = await StartAsync(manual, period: TimeSpan.FromMilliseconds(5));

        var reply = await server.PlainClient().AddAsync(new AddRequest { Amount = 3 });

        Assert.Equal(3, reply.Total);
        Assert.Equal(3, counter.Value);
    }

    [Theory]
    [InlineData(false)]
    [InlineData(true)]
    public async Task Add_AcceptUnauthenticatedHeaders_HeaderWithoutCredentialRunsButUnlistedTokenDoesNot(bool manual)
    {
        var (caller, server, counter) = await StartAsync(manual, acceptUnauthenticated: true);

        var reply = await server.PlainClient().AddAsync(new AddRequest { Amount = 4 }, OriginOf(caller));
        Assert.Equal(4, reply.Total);

        // A credential that is sent is still checked.
        await AddRefusedAsync(server, OriginOf(caller, UnlistedToken), StatusCode.Unauthenticated);
        Assert.Equal(4, counter.Value);
        AssertNoSecrets(server);
    }

    private async Task<(CounterObject Caller, RelayServer Server, CounterObject Counter)> StartAsync(bool manual, bool acceptUnauthenticated = false, TimeSpan? period = null)
    {
        var caller = await _cluster.OpenAsync(1, period);
        var counter = await _cluster.OpenAsync(2, period);
        var credentials = DseCredentials.Parse(
            [
                $"participant 1 {DseCredentials.HashToken(CallerToken)}",
                $"participant 2 {DseCredentials.HashToken(ServerToken)}",
                $"operator ops {DseCredentials.HashToken(OperatorToken)}",
            ],
            "participants");
        var authentication = new DseHeaderAuthentication(credentials, acceptUnauthenticated, _logs.CreateLogger("Dse.Grpc.DseHeaderAuthentication"));
        var server = await _cluster.ServeAsync(counter, manual: manual, authentication: authentication);
        return (caller, server, counter);
    }

    private static Metadata OriginOf(CounterObject caller, string? token = null) =>
        Headers(DseHeader.FromOrigin(caller.Id, caller.WorldLine, caller.CurrentVersion), token);

    private static Metadata Headers(DseHeader header, string? token)
    {
        var headers = new Metadata();
        DseMetadata.SetHeader(headers, header);
        if (token is not null)
        {
            headers.Add(DseCredentials.AuthorizationKey, $"Bearer {token}");
        }

        return headers;
    }

    private async Task<RpcException> AddRefusedAsync(RelayServer server, Metadata headers, StatusCode expected)
    {
        var error = await Assert.ThrowsAsync<RpcException>(() => server.PlainClient().AddAsync(new AddRequest { Amount = 1 }, headers).ResponseAsync);
        Assert.Equal(expected, error.StatusCode);
        _errors.Add(error.ToString());
        return error;
    }

    /// <summary>The handler never ran (it records every request it accepts) and nothing was added.</summary>
    private static void AssertNothingRan(RelayServer server, CounterObject counter)
    {
        Assert.Empty(server.Node.Seen);
        Assert.Equal(0, counter.Value);
    }

    /// <summary>No token, and no token's hash, in any captured log line (the server's and the authentication's) or error.</summary>
    private void AssertNoSecrets(RelayServer server)
    {
        string[] secrets = [CallerToken, ServerToken, OperatorToken, UnlistedToken];
        var lines = server.Logs.Entries.Concat(_logs.Entries).Select(static e => e.ToString()).Concat(_errors).ToList();
        foreach (string secret in secrets)
        {
            string hash = DseCredentials.HashToken(secret)["sha256:".Length..];
            foreach (string line in lines)
            {
                Assert.DoesNotContain(secret, line, StringComparison.Ordinal);
                Assert.DoesNotContain(hash, line, StringComparison.OrdinalIgnoreCase);
            }
        }
    }

    /// <summary>Sums <c>dse.grpc.headers.refused</c> for the relay's Add, per status code, while it is alive.</summary>
    private sealed class RefusedHeaders : IDisposable
    {
        private readonly MeterListener _listener = new();
        private readonly Dictionary<string, long> _counts = [];

        public RefusedHeaders()
        {
            _listener.InstrumentPublished = (instrument, listener) =>
            {
                if (instrument.Meter.Name == DseGrpcInstrumentation.MeterName && instrument.Name == "dse.grpc.headers.refused")
                {
                    listener.EnableMeasurementEvents(instrument);
                }
            };
            _listener.SetMeasurementEventCallback<long>((_, value, tags, _) =>
            {
                string? method = null;
                string? code = null;
                foreach (var tag in tags)
                {
                    if (tag.Key == "method")
                    {
                        method = (string?)tag.Value;
                    }
                    else if (tag.Key == "code")
                    {
                        code = (string?)tag.Value;
                    }
                }

                if (method == AddMethod && code is not null)
                {
                    lock (_counts)
                    {
                        _counts[code] = _counts.GetValueOrDefault(code) + value;
                    }
                }
            });
            _listener.Start();
        }

        public long Count(string code)
        {
            lock (_counts)
            {
                return _counts.GetValueOrDefault(code);
            }
        }

        public void Dispose() => _listener.Dispose();
    }
}
