using System.Text.RegularExpressions;
using Dse.Coordinator.Client;
using Dse.Coordinator.Tests.Infrastructure;
using Dse.Grpc;
using Dse.Testing;
using Grpc.Core;

namespace Dse.Coordinator.Tests;

/// <summary>
/// Who may speak to the coordinator when it has a participants file: no or an unknown token is UNAUTHENTICATED, a call
/// for another participant or a removal without an operator's token is PERMISSION_DENIED and changes nothing, a
/// participant with its own token commits, and no token ever shows in a log line or an error message.
/// </summary>
[Trait("Category", "Security")]
public sealed partial class CoordinatorIdentityTests : IAsyncLifetime
{
    private static readonly string Token1 = DseCredentials.CreateToken();
    private static readonly string Token2 = DseCredentials.CreateToken();
    private static readonly string OperatorToken = DseCredentials.CreateToken();
    private static readonly string StrangerToken = DseCredentials.CreateToken();

    private readonly FileLogHarness _log = new();
    private readonly List<string> _errors = [];
    private CoordinatorTestServer _server = null!;

    private string ParticipantsPath => Path.Combine(_log.Directory, "participants");

    public async Task InitializeAsync()
    {
        await File.WriteAllLinesAsync(ParticipantsPath,
        [
            "# participants of the identity tests",
            $"participant 1 {DseCredentials.HashToken(Token1)}",
            $"participant 2 {DseCredentials.HashToken(Token2)}   # the second",
            $"operator ops {DseCredentials.HashToken(OperatorToken)}",
        ]);
        _server = await CoordinatorTestServer.StartAsync(_log.CreateLog, options => options.ParticipantsFile = ParticipantsPath);
    }

    public async Task DisposeAsync()
    {
        await _server.DisposeAsync();
        await _log.DisposeAsync();
    }

    [Fact]
    public async Task Call_WithoutToken_Unauthenticated()
    {
        var client = _server.CreateClient();

        await RefusedAsync(() => client.GetStateAsync().AsTask(), StatusCode.Unauthenticated, "carries no credential");
        await RefusedAsync(() => client.ConnectAsync(new ConnectRequest(1, [])).AsTask(), StatusCode.Unauthenticated, "carries no credential");
        await RefusedAsync(() => client.RemoveParticipantAsync(1), StatusCode.Unauthenticated, "carries no credential");

        Assert.True(_server.Logs.Contains(3212));
        Assert.Empty(_server.Coordinator.State.Committed);
        AssertNoTokenAnywhere();
    }

    [Fact]
    public async Task Call_WithUnknownOrMalformedToken_Unauthenticated()
    {
        var stranger = _server.CreateClient(new GrpcCoordinatorClientOptions { Token = StrangerToken });
        await RefusedAsync(() => stranger.ConnectAsync(new ConnectRequest(1, [])).AsTask(), StatusCode.Unauthenticated, "not listed in the participants file");

        // The hash itself is not a token.
        var hashAsToken = _server.CreateClient(new GrpcCoordinatorClientOptions { Token = DseCredentials.HashToken(Token1) });
        await RefusedAsync(() => hashAsToken.HeartbeatAsync(1).AsTask(), StatusCode.Unauthenticated, "not listed in the participants file");

        var basic = await Assert.ThrowsAsync<RpcException>(() => RawCalls.CallAsync(_server.Channel, "GetState", [], new Metadata { { "authorization", "Basic " + Token1 } }));
        Assert.Equal(StatusCode.Unauthenticated, basic.StatusCode);
        Assert.Contains("is not a Bearer token", basic.Status.Detail, StringComparison.Ordinal);
        _errors.Add(basic.Message);

        Assert.False(_server.Coordinator.State.Committed.ContainsKey(1));
        AssertNoTokenAnywhere();
    }

    [Fact]
    public async Task CallsForAnotherParticipant_PermissionDenied_NothingChanged()
    {
        var one = _server.CreateClient(new GrpcCoordinatorClientOptions { Token = Token1 });
        var two = _server.CreateClient(new GrpcCoordinatorClientOptions { Token = Token2 });
        await one.ConnectAsync(new ConnectRequest(1, []));
        await two.ConnectAsync(new ConnectRequest(2, []));
        await two.ReportPersistedAsync(2, new VersionReport(1, 0, []));
        var before = await one.GetStateAsync();

        const string Denied = "the token authenticates participant 1: a participant's token speaks for that participant only";
        await RefusedAsync(() => one.ConnectAsync(new ConnectRequest(2, [])).AsTask(), StatusCode.PermissionDenied, Denied);
        await RefusedAsync(() => one.ReportPersistedAsync(2, new VersionReport(2, 0, [])).AsTask(), StatusCode.PermissionDenied, Denied);
        await RefusedAsync(() => one.HeartbeatAsync(2).AsTask(), StatusCode.PermissionDenied, Denied);
        await RefusedAsync(() => one.AcknowledgeRollbackAsync(2, 0, 1).AsTask(), StatusCode.PermissionDenied, Denied);
        await RefusedAsync(() => one.ResyncAsync(new ResyncRequest(2, 0, [], new Dictionary<long, long>())).AsTask(), StatusCode.PermissionDenied, Denied);

        // An operator is not a participant either.
        var ops = _server.CreateClient(new GrpcCoordinatorClientOptions { Token = OperatorToken });
        await RefusedAsync(() => ops.ReportPersistedAsync(2, new VersionReport(2, 0, [])).AsTask(), StatusCode.PermissionDenied, "authenticates operator ops");

        StateAssert.Same(before, await two.GetStateAsync());
        Assert.Equal(1, _server.Coordinator.State.CommittedVersion(2));
        Assert.Equal(6, _server.Logs.Count(3213));
        AssertNoTokenAnywhere();
    }

    [Fact]
    public async Task Inspect_AnyListedToken_NoTokenUnauthenticated()
    {
        var one = _server.CreateClient(new GrpcCoordinatorClientOptions { Token = Token1 });
        await one.ConnectAsync(new ConnectRequest(1, []));

        await RefusedAsync(() => _server.CreateClient().InspectAsync(), StatusCode.Unauthenticated, "carries no credential");
        await RefusedAsync(() => _server.CreateClient(new GrpcCoordinatorClientOptions { Token = StrangerToken }).InspectAsync(), StatusCode.Unauthenticated, "not listed in the participants file");

        // Read-only: a participant sees every member, and so does an operator.
        Assert.Equal(1, Assert.Single((await one.InspectAsync()).Participants).ObjectId);
        var ops = _server.CreateClient(new GrpcCoordinatorClientOptions { Token = OperatorToken });
        Assert.Equal(1, Assert.Single((await ops.InspectAsync()).Participants).ObjectId);
        AssertNoTokenAnywhere();
    }

    [Fact]
    public async Task RemoveParticipant_OnlyWithAnOperatorToken()
    {
        var one = _server.CreateClient(new GrpcCoordinatorClientOptions { Token = Token1 });
        var two = _server.CreateClient(new GrpcCoordinatorClientOptions { Token = Token2 });
        await one.ConnectAsync(new ConnectRequest(1, []));
        await two.ConnectAsync(new ConnectRequest(2, []));
        var before = await one.GetStateAsync();

        await RefusedAsync(() => one.RemoveParticipantAsync(2), StatusCode.PermissionDenied, "RemoveParticipant is an operator action, and the token authenticates participant 1");
        await RefusedAsync(() => two.RemoveParticipantAsync(2), StatusCode.PermissionDenied, "RemoveParticipant is an operator action");
        StateAssert.Same(before, await one.GetStateAsync());

        var ops = _server.CreateClient(new GrpcCoordinatorClientOptions { Token = OperatorToken });
        Assert.True(await ops.RemoveParticipantAsync(2));
        Assert.Contains("operator ops at ", (await _server.Logs.WaitForAsync(3206)).Message, StringComparison.Ordinal);
        AssertNoTokenAnywhere();
    }

    [Fact]
    public async Task Participant_WithItsToken_ConnectsReportsAndCommits()
    {
        string tokenFile = Path.Combine(_log.Directory, "token1");
        await File.WriteAllTextAsync(tokenFile, Token1 + "\n");
        var one = _server.CreateClient(new GrpcCoordinatorClientOptions { TokenPath = tokenFile });

        var connected = await one.ConnectAsync(new ConnectRequest(1, []));
        Assert.Equal(ReportOutcome.Accepted, await one.ReportPersistedAsync(1, new VersionReport(1, 0, [])));
        await one.HeartbeatAsync(1);
        var state = await one.WaitForChangeAsync(connected.State.Epoch);

        Assert.Equal(1, state.CommittedVersion(1));
        Assert.True(_server.Logs.Contains(3211));
        Assert.False(_server.Logs.Contains(3212));
        Assert.False(_server.Logs.Contains(3213));
        AssertNoTokenAnywhere();
    }

    [Fact]
    public async Task Host_WithParticipantsOverTls_AuthenticatesAndNeverPrintsATokenOrHash()
    {
        using var ca = TestCertificateAuthority.Create();
        var host = HostProcess.Start("--port", "0", "--log", $"file:{_log.Path}.host", "--participants", ParticipantsPath,
            "--tls-cert", ca.ServerCertificatePath, "--tls-key", ca.ServerKeyPath);
        var address = new Uri(ListeningLine().Match(await host.ReadLineAsync()).Groups["address"].Value);

        using (var one = new GrpcCoordinatorClient(address, new GrpcCoordinatorClientOptions { CertificateAuthority = ca.Authority, Token = Token1 }))
        {
            var connected = await one.ConnectAsync(new ConnectRequest(1, []));
            Assert.Equal(ReportOutcome.Accepted, await one.ReportPersistedAsync(1, new VersionReport(1, 0, [])));
            Assert.Equal(1, (await one.WaitForChangeAsync(connected.State.Epoch)).CommittedVersion(1));
            await RefusedAsync(() => one.HeartbeatAsync(2).AsTask(), StatusCode.PermissionDenied, "speaks for that participant only");
        }

        using (var stranger = new GrpcCoordinatorClient(address, new GrpcCoordinatorClientOptions { CertificateAuthority = ca.Authority, Token = StrangerToken }))
        {
            await RefusedAsync(() => stranger.GetStateAsync().AsTask(), StatusCode.Unauthenticated, "not listed");
        }

        await host.DisposeAsync();
        string output = await host.StandardErrorAsync();
        Assert.Contains("Coordinator calls need a bearer token from participants file", output, StringComparison.Ordinal);
        Assert.DoesNotContain("are not authenticated", output, StringComparison.Ordinal);
        Assert.Contains("refused with PermissionDenied", output, StringComparison.Ordinal);
        foreach (string secret in new[] { Token1, StrangerToken, DseCredentials.HashToken(Token1) })
        {
            Assert.DoesNotContain(secret, output, StringComparison.Ordinal);
        }
    }

    [Fact]
    public async Task Host_WithoutParticipants_SaysCallsAreNotAuthenticated()
    {
        var host = HostProcess.Start("--port", "0", "--log", $"file:{_log.Path}.host");
        string address = PlaintextListeningLine().Match(await host.ReadLineAsync()).Groups["address"].Value;
        await host.DisposeAsync();

        string output = await host.StandardErrorAsync();
        Assert.Contains($"warning: calls to {address} are not authenticated: anyone who can reach it may connect, report and remove participants; pass --participants PATH to require participant tokens.", output, StringComparison.Ordinal);
    }

    [Fact]
    public async Task Host_TokenCommand_PrintsATokenAndItsParticipantsLine()
    {
        await using var token = HostProcess.Start("token", "--participant", "7");
        string secret = await token.ReadLineAsync();
        string line = await token.ReadLineAsync();
        Assert.Equal(0, await token.WaitForExitAsync());

        Assert.Equal($"participant 7 {DseCredentials.HashToken(secret)}", line);
        var caller = DseCredentials.Parse([line], "printed").Authenticate(new Metadata { { "authorization", "Bearer " + secret } }, out _);
        Assert.NotNull(caller);
        Assert.True(caller.SpeaksFor(7));
    }

    [Fact]
    public async Task Host_ParticipantsFileThatDoesNotParse_ExitCode2NamingTheLineNotItsText()
    {
        string bad = Path.Combine(_log.Directory, "bad-participants");
        await File.WriteAllLinesAsync(bad, [$"participant 1 {DseCredentials.HashToken(Token1)}", $"participant 2 {Token2}"]);
        await using var host = HostProcess.Start("--port", "0", "--log", $"file:{_log.Path}.host", "--participants", bad);

        Assert.Equal(2, await host.WaitForExitAsync());
        string error = await host.StandardErrorAsync();
        Assert.Contains($"--participants: {bad} line 2: the third field must be sha256: followed by 64 hexadecimal digits", error, StringComparison.Ordinal);
        Assert.DoesNotContain(Token2, error, StringComparison.Ordinal);
    }

    [Theory]
    [InlineData("participant x sha256:00", "line 1: the third field must be sha256:")]
    [InlineData("participant -1 sha256:0000000000000000000000000000000000000000000000000000000000000000", "line 1: a participant id is a whole number")]
    [InlineData("participant 1", "line 1: expected 'participant ID sha256:HEX'")]
    [InlineData("participant 1 sha256:0000000000000000000000000000000000000000000000000000000000000000\nparticipant 1 sha256:1111111111111111111111111111111111111111111111111111111111111111", "line 2: participant 1 is listed twice")]
    [InlineData("participant 1 sha256:0000000000000000000000000000000000000000000000000000000000000000\noperator o sha256:0000000000000000000000000000000000000000000000000000000000000000", "line 2: an operator's token must not also be a participant's")]
    public void Credentials_MalformedFile_NamesTheLine(string text, string expected)
    {
        var error = Assert.Throws<InvalidDataException>(() => DseCredentials.Parse(text.Split('\n'), "participants"));
        Assert.Contains(expected, error.Message, StringComparison.Ordinal);
    }

    [Fact]
    public void Credentials_OneTokenForSeveralIds_SpeaksForEach()
    {
        string hash = DseCredentials.HashToken(Token1);
        var credentials = DseCredentials.Parse([$"participant 1 {hash}", $"participant 3 {hash.ToUpperInvariant().Replace("SHA256:", "sha256:", StringComparison.Ordinal)}"], "participants");

        var caller = credentials.Authenticate(new Metadata { { "authorization", "bearer " + Token1 } }, out _);

        Assert.NotNull(caller);
        Assert.Equal([1L, 3L], caller.ParticipantIds);
        Assert.False(caller.SpeaksFor(2));
        Assert.Equal("participants 1, 3", caller.ToString());
    }

    /// <summary>Asserts the refusal's status (the client's inner exception) and that it is not treated as an outage.</summary>
    private async Task RefusedAsync(Func<Task> call, StatusCode status, string detail)
    {
        var error = await Assert.ThrowsAsync<DseCoordinatorException>(call);
        var rpc = Assert.IsType<RpcException>(error.InnerException);
        Assert.Equal(status, rpc.StatusCode);
        Assert.Equal(CoordinatorErrorCode.CredentialRefused, error.Code);
        Assert.Contains(detail, error.Message, StringComparison.Ordinal);
        _errors.Add(error.ToString());
    }

    /// <summary>No token (nor its hash) appears in any captured log line or error message.</summary>
    private void AssertNoTokenAnywhere()
    {
        foreach (string secret in new[] { Token1, Token2, OperatorToken, StrangerToken })
        {
            foreach (var entry in _server.Logs.Entries)
            {
                Assert.DoesNotContain(secret, entry.ToString(), StringComparison.Ordinal);
                Assert.DoesNotContain(DseCredentials.HashToken(secret), entry.ToString(), StringComparison.Ordinal);
            }

            foreach (string error in _errors)
            {
                Assert.DoesNotContain(secret, error, StringComparison.Ordinal);
            }
        }
    }

    [GeneratedRegex(@"^DSE coordinator listening on (?<address>https://127\.0\.0\.1:[0-9]+)$")]
    private static partial Regex ListeningLine();

    [GeneratedRegex(@"^DSE coordinator listening on (?<address>http://127\.0\.0\.1:[0-9]+)$")]
    private static partial Regex PlaintextListeningLine();
}
