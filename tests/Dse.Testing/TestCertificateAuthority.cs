using System.Net;
using System.Security.Cryptography;
using System.Security.Cryptography.X509Certificates;

namespace Dse.Testing;

/// <summary>
/// A throwaway certificate authority made at test time: a self-signed CA and a server certificate for 127.0.0.1, ::1
/// and localhost signed by it, written as PEM files to a temporary folder that <see cref="Dispose"/> deletes.
/// </summary>
public sealed class TestCertificateAuthority : IDisposable
{
    private TestCertificateAuthority(string directory, X509Certificate2 authority)
    {
        Directory = directory;
        Authority = authority;
    }

    /// <summary>The folder holding the PEM files.</summary>
    public string Directory { get; }

    /// <summary>The CA certificate (public part only).</summary>
    public X509Certificate2 Authority { get; }

    /// <summary>The CA certificate as PEM.</summary>
    public string AuthorityPath => Path.Combine(Directory, "ca.pem");

    /// <summary>The server certificate (127.0.0.1, ::1, localhost) as PEM.</summary>
    public string ServerCertificatePath => Path.Combine(Directory, "server.pem");

    /// <summary>The server certificate's private key as PKCS#8 PEM.</summary>
    public string ServerKeyPath => Path.Combine(Directory, "server.key");

    /// <summary>Makes a CA and a server certificate in a new temporary folder.</summary>
    public static TestCertificateAuthority Create(string name = "DSE test CA")
    {
        string directory = Path.Combine(Path.GetTempPath(), "dse-test-ca-" + Guid.NewGuid().ToString("N"));
        System.IO.Directory.CreateDirectory(directory);
        var authority = WriteAuthorityAndServer(directory, name);
        return new TestCertificateAuthority(directory, authority);
    }

    /// <summary>
    /// Writes ca.pem, server.pem and server.key to <paramref name="directory"/>: a CA named <paramref name="name"/>, valid
    /// for a day, and a server certificate for 127.0.0.1, ::1 and localhost that it signed. Returns the CA certificate.
    /// </summary>
    public static X509Certificate2 WriteAuthorityAndServer(string directory, string name)
    {
        var now = DateTimeOffset.UtcNow;
        using var caKey = ECDsa.Create(ECCurve.NamedCurves.nistP256);
        var caRequest = new CertificateRequest($"CN={name}", caKey, HashAlgorithmName.SHA256);
        caRequest.CertificateExtensions.Add(new X509BasicConstraintsExtension(certificateAuthority: true, hasPathLengthConstraint: true, pathLengthConstraint: 0, critical: true));
        caRequest.CertificateExtensions.Add(new X509KeyUsageExtension(X509KeyUsageFlags.KeyCertSign | X509KeyUsageFlags.CrlSign, critical: true));
        caRequest.CertificateExtensions.Add(new X509SubjectKeyIdentifierExtension(caRequest.PublicKey, critical: false));
        using var ca = caRequest.CreateSelfSigned(now.AddMinutes(-5), now.AddDays(1));

        using var serverKey = ECDsa.Create(ECCurve.NamedCurves.nistP256);
        var serverRequest = new CertificateRequest("CN=localhost", serverKey, HashAlgorithmName.SHA256);
        serverRequest.CertificateExtensions.Add(new X509BasicConstraintsExtension(certificateAuthority: false, hasPathLengthConstraint: false, pathLengthConstraint: 0, critical: true));
        serverRequest.CertificateExtensions.Add(new X509KeyUsageExtension(X509KeyUsageFlags.DigitalSignature, critical: true));
        serverRequest.CertificateExtensions.Add(new X509EnhancedKeyUsageExtension([new Oid("1.3.6.1.5.5.7.3.1")], critical: false));
        serverRequest.CertificateExtensions.Add(X509AuthorityKeyIdentifierExtension.CreateFromCertificate(ca, includeKeyIdentifier: true, includeIssuerAndSerial: false));
        var names = new SubjectAlternativeNameBuilder();
        names.AddIpAddress(IPAddress.Loopback);
        names.AddIpAddress(IPAddress.IPv6Loopback);
        names.AddDnsName("localhost");
        serverRequest.CertificateExtensions.Add(names.Build());
        byte[] serial = RandomNumberGenerator.GetBytes(16);
        serial[0] &= 0x7F;
        using var server = serverRequest.Create(ca, now.AddMinutes(-5), now.AddDays(1), serial);

        File.WriteAllText(Path.Combine(directory, "ca.pem"), ca.ExportCertificatePem());
        File.WriteAllText(Path.Combine(directory, "server.pem"), server.ExportCertificatePem());
        File.WriteAllText(Path.Combine(directory, "server.key"), serverKey.ExportPkcs8PrivateKeyPem());
        return X509CertificateLoader.LoadCertificate(ca.RawData);
    }

    /// <summary>Deletes the folder and its keys.</summary>
    public void Dispose()
    {
        Authority.Dispose();
        try
        {
            System.IO.Directory.Delete(Directory, recursive: true);
        }
        catch (IOException)
        {
            // A process that still holds a file keeps it; the temporary folder is cleaned up by the system.
        }
    }
}
