using System.Security.Cryptography.X509Certificates;

namespace Dse.Coordinator.Client;

/// <summary>Options of a <see cref="GrpcCoordinatorClient"/>; validated when it is created.</summary>
public sealed class GrpcCoordinatorClientOptions
{
    /// <summary>The default of <see cref="MaxMessageSize"/> on both sides: 64 MB.</summary>
    public const int DefaultMaxMessageSize = 64 * 1024 * 1024;

    /// <summary>
    /// The deadline of every call but connect and the long poll. A coordinator that does not answer within it counts as
    /// unavailable. Default 10 s; between 1 ms and 10 minutes.
    /// </summary>
    public TimeSpan CallTimeout { get; set; } = TimeSpan.FromSeconds(10);

    /// <summary>
    /// The deadline of <see cref="GrpcCoordinatorClient.ConnectAsync"/>, which waits for the other participants during a
    /// cold start (<c>ClusterCoordinatorOptions.ExpectedParticipants</c>). Default 5 minutes; between 1 ms and
    /// 1 hour.
    /// </summary>
    public TimeSpan ConnectTimeout { get; set; } = TimeSpan.FromMinutes(5);

    /// <summary>
    /// How long one long poll of <see cref="GrpcCoordinatorClient.WaitForChangeAsync"/> asks the server to wait; the
    /// server may answer earlier (its own cap), and the client then polls again. Its deadline is this plus
    /// <see cref="CallTimeout"/>. Default 20 s; between 1 ms and 10 minutes.
    /// </summary>
    public TimeSpan LongPollWait { get; set; } = TimeSpan.FromSeconds(20);

    /// <summary>
    /// The largest message, in bytes, the client's own channel sends or receives (gRPC's default is 4 MB; a connect or
    /// resync after a long outage lists every durable version and can be larger). A larger message fails the call with
    /// <see cref="CoordinatorErrorCode.InvalidRequest"/>. The coordinator host has its own limit (<c>--max-message-size</c>,
    /// <c>CoordinatorServerOptions.MaxMessageSize</c>) with the same default; raise both together. Not applied to a
    /// channel the caller passes in, which carries its own limits. Default 64 MB
    /// (<see cref="DefaultMaxMessageSize"/>); between 1 KB and 2 GB - 1.
    /// </summary>
    public int MaxMessageSize { get; set; } = DefaultMaxMessageSize;

    /// <summary>
    /// The certificate authority that an https coordinator's certificate must chain to, and the only one trusted for it
    /// (<see cref="TrustedCertificateAuthority"/>): a cluster can use a private CA without installing it machine-wide. The
    /// certificate must still name the host of the address. Applies to the client's own channel and needs an https
    /// address. Default <c>null</c>: the machine's trusted roots (or <see cref="CertificateAuthorityPath"/>).
    /// </summary>
    public X509Certificate2? CertificateAuthority { get; set; }

    /// <summary>
    /// A PEM file holding the certificate authority, read when the client is created; the same as
    /// <see cref="CertificateAuthority"/>, which it excludes. Default <c>null</c>.
    /// </summary>
    public string? CertificateAuthorityPath { get; set; }

    /// <summary>Throws an <see cref="ArgumentException"/> naming the first invalid option.</summary>
    public void Validate()
    {
        if (CallTimeout < TimeSpan.FromMilliseconds(1) || CallTimeout > TimeSpan.FromMinutes(10))
        {
            throw new ArgumentException($"{nameof(GrpcCoordinatorClientOptions)}.{nameof(CallTimeout)} must be between 1 ms and 10 minutes (got {CallTimeout}).", nameof(CallTimeout));
        }

        if (ConnectTimeout < TimeSpan.FromMilliseconds(1) || ConnectTimeout > TimeSpan.FromHours(1))
        {
            throw new ArgumentException($"{nameof(GrpcCoordinatorClientOptions)}.{nameof(ConnectTimeout)} must be between 1 ms and 1 hour (got {ConnectTimeout}).", nameof(ConnectTimeout));
        }

        if (LongPollWait < TimeSpan.FromMilliseconds(1) || LongPollWait > TimeSpan.FromMinutes(10))
        {
            throw new ArgumentException($"{nameof(GrpcCoordinatorClientOptions)}.{nameof(LongPollWait)} must be between 1 ms and 10 minutes (got {LongPollWait}).", nameof(LongPollWait));
        }

        if (MaxMessageSize < 1024)
        {
            throw new ArgumentException($"{nameof(GrpcCoordinatorClientOptions)}.{nameof(MaxMessageSize)} must be at least 1024 bytes (got {MaxMessageSize}).", nameof(MaxMessageSize));
        }

        if (CertificateAuthority is not null && CertificateAuthorityPath is not null)
        {
            throw new ArgumentException($"{nameof(GrpcCoordinatorClientOptions)}: set {nameof(CertificateAuthority)} or {nameof(CertificateAuthorityPath)}, not both.", nameof(CertificateAuthorityPath));
        }

        if (CertificateAuthorityPath is not null && !File.Exists(CertificateAuthorityPath))
        {
            throw new ArgumentException($"{nameof(GrpcCoordinatorClientOptions)}.{nameof(CertificateAuthorityPath)}: no file '{CertificateAuthorityPath}'.", nameof(CertificateAuthorityPath));
        }
    }
}
