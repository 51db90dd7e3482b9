using System.Net;
using System.Security.Cryptography;
using System.Security.Cryptography.X509Certificates;
using Dse.Coordinator.Client;

namespace Dse.Samples.Shared;

/// <summary>
/// The TLS material of a run with <c>--tls</c>: a throwaway CA and one server certificate for 127.0.0.1 and localhost
/// signed by it, as PEM files in the run's folder. Every process serves with the certificate; every client trusts the
/// CA only. The CA's private key is never written: nothing can issue another certificate after the run started.
/// </summary>
internal sealed record ClusterTls(string CertificatePath, string KeyPath, string AuthorityPath)
{
    /// <summary>Makes the CA and the server certificate in <paramref name="directory"/> (created).</summary>
    public static ClusterTls Create(string directory)
    {
        Directory.CreateDirectory(directory);
        var now = DateTimeOffset.UtcNow;
        using var caKey = ECDsa.Create(ECCurve.NamedCurves.nistP256);
        var caRequest = new CertificateRequest("CN=DSE sample throwaway CA", caKey, HashAlgorithmName.SHA256);
        caRequest.CertificateExtensions.Add(new X509BasicConstraintsExtension(true, true, 0, true));
        caRequest.CertificateExtensions.Add(new X509KeyUsageExtension(X509KeyUsageFlags.KeyCertSign, true));
        caRequest.CertificateExtensions.Add(new X509SubjectKeyIdentifierExtension(caRequest.PublicKey, false));
        using var ca = caRequest.CreateSelfSigned(now.AddMinutes(-5), now.AddDays(2));

        using var key = ECDsa.Create(ECCurve.NamedCurves.nistP256);
        var request = new CertificateRequest("CN=localhost", key, HashAlgorithmName.SHA256);
        request.CertificateExtensions.Add(new X509BasicConstraintsExtension(false, false, 0, true));
        request.CertificateExtensions.Add(new X509KeyUsageExtension(X509KeyUsageFlags.DigitalSignature, true));
        request.CertificateExtensions.Add(new X509EnhancedKeyUsageExtension([new Oid("1.3.6.1.5.5.7.3.1")], false));
        request.CertificateExtensions.Add(X509AuthorityKeyIdentifierExtension.CreateFromCertificate(ca, true, false));
        var names = new SubjectAlternativeNameBuilder();
        names.AddIpAddress(IPAddress.Loopback);
        names.AddDnsName("localhost");
        request.CertificateExtensions.Add(names.Build());
        byte[] serial = RandomNumberGenerator.GetBytes(16);
        serial[0] &= 0x7F;
        using var server = request.Create(ca, now.AddMinutes(-5), now.AddDays(2), serial);

        var tls = new ClusterTls(Path.Combine(directory, "server.pem"), Path.Combine(directory, "server.key"), Path.Combine(directory, "ca.pem"));
        File.WriteAllText(tls.AuthorityPath, ca.ExportCertificatePem());
        File.WriteAllText(tls.CertificatePath, server.ExportCertificatePem());
        File.WriteAllText(tls.KeyPath, key.ExportPkcs8PrivateKeyPem());
        return tls;
    }

    /// <summary>The paths a child process was given (<c>--tls-cert</c>, <c>--tls-key</c>, <c>--tls-ca</c>), or <c>null</c> for plaintext.</summary>
    public static ClusterTls? FromArguments(ChildArguments args) =>
        args.GetOptional("tls-cert") is { } certificate
            ? new ClusterTls(certificate, args.Get("tls-key"), args.Get("tls-ca"))
            : null;

    /// <summary>The CA certificate, for a client's trust.</summary>
    public X509Certificate2 LoadAuthority() => TrustedCertificateAuthority.LoadPem(AuthorityPath);
}
