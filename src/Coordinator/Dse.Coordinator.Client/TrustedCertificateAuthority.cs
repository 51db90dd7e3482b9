using System.Net.Security;
using System.Security.Cryptography;
using System.Security.Cryptography.X509Certificates;

namespace Dse.Coordinator.Client;

/// <summary>
/// Trust in one private certificate authority for a TLS client: a server certificate is accepted only when it chains to
/// that CA (and to no other root, whatever the machine trusts), is valid for server authentication, and names the host
/// the client called. Lets a cluster use its own CA without installing it machine-wide.
/// </summary>
public static class TrustedCertificateAuthority
{
    private static readonly Oid ServerAuthentication = new("1.3.6.1.5.5.7.3.1");

    /// <summary>Reads a CA certificate from a PEM file (the first certificate in it).</summary>
    /// <exception cref="ArgumentException">The file is missing or holds no PEM certificate; the message names the path.</exception>
    public static X509Certificate2 LoadPem(string path)
    {
        ArgumentException.ThrowIfNullOrWhiteSpace(path);
        string text;
        try
        {
            text = File.ReadAllText(path);
        }
        catch (Exception ex) when (ex is IOException or UnauthorizedAccessException)
        {
            throw new ArgumentException($"The CA certificate file '{path}' cannot be read: {ex.Message}", nameof(path), ex);
        }

        try
        {
            return X509Certificate2.CreateFromPem(text);
        }
        catch (CryptographicException ex)
        {
            // The message names the file only: its content is not echoed.
            throw new ArgumentException($"The CA certificate file '{path}' holds no PEM certificate (-----BEGIN CERTIFICATE-----): {ex.Message}", nameof(path), ex);
        }
    }

    /// <summary>
    /// A validation callback for <see cref="SslClientAuthenticationOptions.RemoteCertificateValidationCallback"/> that
    /// trusts <paramref name="authority"/> only, and still requires the certificate to match the host name.
    /// </summary>
    public static RemoteCertificateValidationCallback CreateValidator(X509Certificate2 authority)
    {
        ArgumentNullException.ThrowIfNull(authority);
        return (_, certificate, chain, errors) => Validate(authority, certificate, chain, errors);
    }

    /// <summary>Sets <paramref name="handler"/>'s TLS validation to <see cref="CreateValidator"/> of <paramref name="authority"/>.</summary>
    public static SocketsHttpHandler Apply(SocketsHttpHandler handler, X509Certificate2 authority)
    {
        ArgumentNullException.ThrowIfNull(handler);
        handler.SslOptions.RemoteCertificateValidationCallback = CreateValidator(authority);
        return handler;
    }

    private static bool Validate(X509Certificate2 authority, X509Certificate? certificate, X509Chain? presented, SslPolicyErrors errors)
    {
        // The host name check is SslStream's; a chain error is ours to decide against the private CA.
        if (certificate is null || (errors & (SslPolicyErrors.RemoteCertificateNotAvailable | SslPolicyErrors.RemoteCertificateNameMismatch)) != 0)
        {
            return false;
        }

        using var chain = new X509Chain();
        chain.ChainPolicy.TrustMode = X509ChainTrustMode.CustomRootTrust;
        chain.ChainPolicy.CustomTrustStore.Add(authority);
        chain.ChainPolicy.RevocationMode = X509RevocationMode.NoCheck;
        chain.ChainPolicy.ApplicationPolicy.Add(ServerAuthentication);
        if (presented is not null)
        {
            // Intermediates the server sent.
            foreach (var element in presented.ChainElements)
            {
                chain.ChainPolicy.ExtraStore.Add(element.Certificate);
            }
        }

        using var leaf = X509CertificateLoader.LoadCertificate(certificate.GetRawCertData());
        return chain.Build(leaf);
    }
}
