using System.Net;
using System.Security.Cryptography;
using System.Security.Cryptography.X509Certificates;
using Dse.Hosting;
using Microsoft.AspNetCore.Server.Kestrel.Core;
using Microsoft.AspNetCore.Server.Kestrel.Https;
using Microsoft.Extensions.DependencyInjection;
using Microsoft.Extensions.Logging;
using Microsoft.Extensions.Logging.Abstractions;

namespace Microsoft.AspNetCore.Hosting;

/// <summary>
/// Kestrel endpoints for DSE gRPC services: TLS from a PEM certificate and key, or plaintext HTTP/2 on a loopback address
/// only, which is for development on one machine and says so when the endpoint is configured.
/// </summary>
public static class DseKestrelExtensions
{
    /// <summary>
    /// Listens on <paramref name="address"/>:<paramref name="port"/> for gRPC. With <paramref name="certificatePath"/> and
    /// <paramref name="keyPath"/> (PEM) it serves TLS with HTTP/2 and HTTP/1.1 (<see cref="UseDseTls"/>); without them it
    /// serves plaintext HTTP/2 and only on a loopback address, and logs a warning (event 5010) that plaintext is for
    /// loopback development only.
    /// </summary>
    /// <param name="kestrel">Kestrel's options (<c>builder.WebHost.ConfigureKestrel(k => k.ListenDse(...))</c>).</param>
    /// <param name="address">The IP address to listen on.</param>
    /// <param name="port">The TCP port; 0 picks a free one.</param>
    /// <param name="certificatePath">The server certificate as PEM (then any intermediates), or <c>null</c> for plaintext.</param>
    /// <param name="keyPath">Its private key as PEM; given exactly when <paramref name="certificatePath"/> is.</param>
    /// <param name="configure">Further configuration of the endpoint (it sees the bound port once the server started).</param>
    /// <returns><paramref name="kestrel"/>.</returns>
    /// <exception cref="ArgumentException">
    /// Only one of the paths is given, the files are not a usable certificate and key, or plaintext was asked for on an
    /// address that is not loopback; the message says which and names the files, never their content.
    /// </exception>
    public static KestrelServerOptions ListenDse(this KestrelServerOptions kestrel, IPAddress address, int port, string? certificatePath, string? keyPath, Action<ListenOptions>? configure = null)
    {
        ArgumentNullException.ThrowIfNull(kestrel);
        ArgumentNullException.ThrowIfNull(address);
        if ((certificatePath is null) != (keyPath is null))
        {
            throw new ArgumentException($"TLS needs both a certificate and a key file (got only the {(certificatePath is null ? "key" : "certificate")}).", certificatePath is null ? nameof(certificatePath) : nameof(keyPath));
        }

        if (certificatePath is null && !IPAddress.IsLoopback(address))
        {
            throw new ArgumentException(
                $"{address} is not a loopback address, and plaintext is for loopback development only: serve TLS with a certificate and key (PEM), or listen on 127.0.0.1 or ::1.",
                nameof(address));
        }

        var logger = kestrel.ApplicationServices?.GetService<ILoggerFactory>()?.CreateLogger("Dse.Hosting.Kestrel") ?? NullLogger.Instance;
        kestrel.Listen(address, port, listen =>
        {
            if (certificatePath is null)
            {
                listen.Protocols = HttpProtocols.Http2;
                DseHostingLogMessages.ServingPlaintext(logger, listen.EndPoint.ToString() ?? address.ToString());
            }
            else
            {
                listen.UseDseTls(certificatePath, keyPath!);
                if (logger.IsEnabled(LogLevel.Information))
                {
                    // UseDseTls loaded the certificate; its public facts identify it in the log.
                    using var certificate = X509Certificate2.CreateFromPem(File.ReadAllText(certificatePath));
                    DseHostingLogMessages.ServingTls(logger, listen.EndPoint.ToString() ?? address.ToString(), certificate.Subject, certificate.Thumbprint, certificate.NotAfter.ToUniversalTime());
                }
            }

            configure?.Invoke(listen);
        });
        return kestrel;
    }

    /// <summary>
    /// Serves TLS on the endpoint with the PEM certificate at <paramref name="certificatePath"/> (the server's, then any
    /// intermediates, which are sent with it) and the PEM private key at <paramref name="keyPath"/>, offering HTTP/2 and
    /// HTTP/1.1 (gRPC and plain HTTP such as health checks on one port).
    /// </summary>
    /// <returns><paramref name="listen"/>.</returns>
    /// <exception cref="ArgumentException">The files are missing or not a matching certificate and key; the message names them, never their content.</exception>
    public static ListenOptions UseDseTls(this ListenOptions listen, string certificatePath, string keyPath)
    {
        ArgumentNullException.ThrowIfNull(listen);
        ArgumentException.ThrowIfNullOrWhiteSpace(certificatePath);
        ArgumentException.ThrowIfNullOrWhiteSpace(keyPath);
        X509Certificate2 certificate;
        var intermediates = new X509Certificate2Collection();
        try
        {
            intermediates.ImportFromPemFile(certificatePath);
            intermediates.RemoveAt(0);
            certificate = LoadForTls(X509Certificate2.CreateFromPemFile(certificatePath, keyPath));
        }
        catch (Exception ex) when (ex is CryptographicException or ArgumentException or IOException or UnauthorizedAccessException)
        {
            throw new ArgumentException($"The TLS certificate '{certificatePath}' with key '{keyPath}' is not a usable PEM certificate and private key: {ex.Message}", nameof(certificatePath), ex);
        }

        listen.Protocols = HttpProtocols.Http1AndHttp2;
        return listen.UseHttps(new HttpsConnectionAdapterOptions
        {
            ServerCertificate = certificate,
            ServerCertificateChain = intermediates.Count > 0 ? intermediates : null,
        });
    }

    /// <summary>SChannel (Windows) cannot use the ephemeral key of a PEM import; a PKCS#12 round trip gives it a stored one.</summary>
    private static X509Certificate2 LoadForTls(X509Certificate2 pem)
    {
        if (!OperatingSystem.IsWindows())
        {
            return pem;
        }

        using (pem)
        {
            return X509CertificateLoader.LoadPkcs12(pem.Export(X509ContentType.Pkcs12), null);
        }
    }
}
