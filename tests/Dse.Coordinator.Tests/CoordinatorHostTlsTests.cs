using System.Net;
using System.Text.RegularExpressions;
using Dse.Coordinator.Client;
using Dse.Coordinator.Tests.Infrastructure;
using Dse.Testing;

namespace Dse.Coordinator.Tests;

/// <summary>
/// The coordinator host's transport security, with a CA made at test time: TLS with --tls-cert/--tls-key, who can and
/// cannot connect, the loopback-only rule for plaintext and what the host says at start.
/// </summary>
[Trait("Category", "Security")]
public sealed partial class CoordinatorHostTlsTests : IAsyncLifetime
{
    private static readonly GrpcCoordinatorClientOptions Quick = new() { CallTimeout = TimeSpan.FromSeconds(5) };

    private readonly FileLogHarness _log = new();
    private readonly TestCertificateAuthority _ca = TestCertificateAuthority.Create();

    public Task InitializeAsync() => Task.CompletedTask;

    public async Task DisposeAsync()
    {
        await _log.DisposeAsync();
        _ca.Dispose();
    }

    [Fact]
    public async Task Host_Tls_ClientTrustingTheCaConnectsAndHealthAnswersOverHttps()
    {
        await using var host = StartTls("--health-port", "0");
        var address = new Uri(TlsListeningLine().Match(await host.ReadLineAsync()).Groups["address"].Value);
        var health = TlsHealthLine().Match(await host.ReadLineAsync());
        Assert.True(health.Success, "With TLS, the health port serves https.");

        using (var client = new GrpcCoordinatorClient(address, new GrpcCoordinatorClientOptions { CertificateAuthorityPath = _ca.AuthorityPath }))
        {
            var connected = await client.ConnectAsync(new ConnectRequest(1, []));
            Assert.Equal(1, connected.State.Incarnation);
            Assert.Equal(ReportOutcome.Accepted, await client.ReportPersistedAsync(1, new VersionReport(1, 0, [])));
        }

        // The same trust through an X509Certificate2, with /healthz over HTTP/1.1 on both ports.
        using var handler = TrustedCertificateAuthority.Apply(new SocketsHttpHandler(), _ca.Authority);
        using var http = new HttpClient(handler);
        foreach (var healthz in new[] { new Uri(address, "/healthz"), new Uri(health.Groups["address"].Value) })
        {
            using var response = await http.GetAsync(healthz);
            Assert.Equal(HttpStatusCode.OK, response.StatusCode);
            Assert.Equal(new Version(1, 1), response.Version);
        }
    }

    [Fact]
    public async Task Host_Tls_ClientNotTrustingTheCa_FailsNamingTheHandshake()
    {
        await using var host = StartTls();
        var address = new Uri(TlsListeningLine().Match(await host.ReadLineAsync()).Groups["address"].Value);
        using var otherCa = TestCertificateAuthority.Create("another CA");

        foreach (var options in new[] { Quick, new GrpcCoordinatorClientOptions { CallTimeout = Quick.CallTimeout, CertificateAuthority = otherCa.Authority } })
        {
            using var client = new GrpcCoordinatorClient(address, options);
            var error = await Assert.ThrowsAsync<DseCoordinatorException>(() => client.GetStateAsync().AsTask());
            Assert.Equal(CoordinatorErrorCode.Unavailable, error.Code);
            Assert.Contains("TLS handshake failed", error.Message, StringComparison.Ordinal);
            Assert.Contains("CertificateAuthority", error.Message, StringComparison.Ordinal);
        }
    }

    [Fact]
    public async Task Host_Tls_CertificateForAnotherHost_Refused()
    {
        await using var host = StartTls("--bind", "0.0.0.0");
        var address = new Uri(TlsListeningLine().Match(await host.ReadLineAsync()).Groups["address"].Value);

        // The certificate names 127.0.0.1, ::1 and localhost; 127.0.0.2 reaches the wildcard bind under another name.
        var elsewhere = new UriBuilder(address) { Host = "127.0.0.2" }.Uri;
        using var client = new GrpcCoordinatorClient(elsewhere, new GrpcCoordinatorClientOptions { CallTimeout = Quick.CallTimeout, CertificateAuthority = _ca.Authority });
        var error = await Assert.ThrowsAsync<DseCoordinatorException>(() => client.GetStateAsync().AsTask());
        Assert.Contains("TLS handshake failed", error.Message, StringComparison.Ordinal);
    }

    [Fact]
    public async Task Host_Tls_PlaintextClient_Fails()
    {
        await using var host = StartTls();
        var address = new Uri(TlsListeningLine().Match(await host.ReadLineAsync()).Groups["address"].Value);

        using var client = new GrpcCoordinatorClient(new UriBuilder(address) { Scheme = "http" }.Uri, Quick);
        var error = await Assert.ThrowsAsync<DseCoordinatorException>(() => client.GetStateAsync().AsTask());
        Assert.Equal(CoordinatorErrorCode.Unavailable, error.Code);
    }

    [Fact]
    public async Task Host_NonLoopbackBindWithoutTls_RefusedNamingTheFlags()
    {
        await using var host = HostProcess.Start("--port", "0", "--bind", "0.0.0.0", "--log", $"file:{_log.Path}");

        Assert.Equal(2, await host.WaitForExitAsync());
        string error = await host.StandardErrorAsync();
        Assert.Contains("--bind 0.0.0.0 is not a loopback address, and plaintext is for loopback development only", error, StringComparison.Ordinal);
        Assert.Contains("--tls-cert PATH and --tls-key PATH", error, StringComparison.Ordinal);
    }

    [Fact]
    public async Task Host_LoopbackPlaintext_SaysItIsForDevelopmentOnly()
    {
        var host = HostProcess.Start("--port", "0", "--log", $"file:{_log.Path}");
        var listening = PlaintextListeningLine().Match(await host.ReadLineAsync());
        Assert.True(listening.Success);
        await host.DisposeAsync();

        Assert.Contains(
            $"warning: serving plaintext HTTP/2 without TLS on {listening.Groups["address"].Value}: plaintext is for loopback development only; pass --tls-cert and --tls-key to serve TLS.",
            await host.StandardErrorAsync(),
            StringComparison.Ordinal);
    }

    [Fact]
    public async Task Host_WildcardBindWithTls_AnnouncesLoopbackAndServes()
    {
        await using var host = StartTls("--bind", "0.0.0.0");
        var address = new Uri(TlsListeningLine().Match(await host.ReadLineAsync()).Groups["address"].Value);

        using var client = new GrpcCoordinatorClient(address, new GrpcCoordinatorClientOptions { CertificateAuthority = _ca.Authority });
        Assert.Equal(1, (await client.GetStateAsync()).Incarnation);
    }

    [Fact]
    public async Task Host_KeyNotMatchingTheCertificate_ExitCode2WithoutTheKey()
    {
        using var otherCa = TestCertificateAuthority.Create("another CA");
        await using var host = HostProcess.Start("--port", "0", "--log", $"file:{_log.Path}", "--tls-cert", _ca.ServerCertificatePath, "--tls-key", otherCa.ServerKeyPath);

        Assert.Equal(2, await host.WaitForExitAsync());
        string error = await host.StandardErrorAsync();
        Assert.Contains("is not a usable PEM certificate and private key", error, StringComparison.Ordinal);
        string keyBody = File.ReadAllLines(otherCa.ServerKeyPath)[1];
        Assert.DoesNotContain(keyBody, error, StringComparison.Ordinal);
        Assert.DoesNotContain("PRIVATE KEY", error, StringComparison.Ordinal);
    }

    [Theory]
    [InlineData("--tls-cert", "TLS needs both --tls-cert PATH and --tls-key PATH (got only --tls-cert)")]
    [InlineData("--tls-key", "TLS needs both --tls-cert PATH and --tls-key PATH (got only --tls-key)")]
    public async Task Host_OneTlsFlagOnly_ExitCode2(string flag, string message)
    {
        await using var host = HostProcess.Start("--port", "0", "--log", $"file:{_log.Path}", flag, _ca.ServerCertificatePath);

        Assert.Equal(2, await host.WaitForExitAsync());
        Assert.Contains(message, await host.StandardErrorAsync(), StringComparison.Ordinal);
    }

    [Fact]
    public async Task Remove_TlsHostWithTheCa_Removes()
    {
        await using var host = StartTls();
        var address = new Uri(TlsListeningLine().Match(await host.ReadLineAsync()).Groups["address"].Value);
        using (var client = new GrpcCoordinatorClient(address, new GrpcCoordinatorClientOptions { CertificateAuthority = _ca.Authority }))
        {
            await client.ConnectAsync(new ConnectRequest(2, []));
        }

        await using var removed = HostProcess.Start("remove", "--coordinator", address.ToString(), "--id", "2", "--tls-ca", _ca.AuthorityPath);
        Assert.Equal(0, await removed.WaitForExitAsync());
        Assert.StartsWith("Participant 2 removed from the cluster", await removed.ReadLineAsync(), StringComparison.Ordinal);
    }

    private HostProcess StartTls(params string[] more) =>
        HostProcess.Start(["--port", "0", "--log", $"file:{_log.Path}", "--tls-cert", _ca.ServerCertificatePath, "--tls-key", _ca.ServerKeyPath, .. more]);

    [GeneratedRegex(@"^DSE coordinator listening on (?<address>https://127\.0\.0\.1:[0-9]+)$")]
    private static partial Regex TlsListeningLine();

    [GeneratedRegex(@"^DSE coordinator health on (?<address>https://127\.0\.0\.1:[0-9]+/healthz)$")]
    private static partial Regex TlsHealthLine();

    [GeneratedRegex(@"^DSE coordinator listening on (?<address>http://127\.0\.0\.1:[0-9]+)$")]
    private static partial Regex PlaintextListeningLine();
}
