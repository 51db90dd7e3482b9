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

    /// <summary>
    /// The participant's bearer token, sent on every call as <c>authorization: Bearer TOKEN</c>, for a coordinator host
    /// with a participants file (<c>--participants</c>): it must be the token listed for the participant this client
    /// speaks for (or an operator's, for <see cref="GrpcCoordinatorClient.RemoveParticipantAsync"/>). A coordinator that
    /// refuses it answers UNAUTHENTICATED or PERMISSION_DENIED, which this client reports as
    /// <see cref="CoordinatorErrorCode.CredentialRefused"/> (retrying cannot help). Use TLS (an https address) to keep it
    /// secret in transit. Never logged, never part of an error message. Default <c>null</c>: no credential.
    /// </summary>
    public string? Token { get; set; }

    /// <summary>
    /// A file holding the bearer token (its first line, trimmed), read when the client is created; the same as
    /// <see cref="Token"/>, which it excludes. Default <c>null</c>.
    /// </summary>
    public string? TokenPath { get; set; }

    /// <summary>Throws an <see cref="ArgumentException"/> naming the first invalid option; reads <see cref="TokenPath"/>.</summary>
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

        if (Token is not null && TokenPath is not null)
        {
            throw new ArgumentException($"{nameof(GrpcCoordinatorClientOptions)}: set {nameof(Token)} or {nameof(TokenPath)}, not both.", nameof(TokenPath));
        }

        if (TokenPath is not null && !File.Exists(TokenPath))
        {
            throw new ArgumentException($"{nameof(GrpcCoordinatorClientOptions)}.{nameof(TokenPath)}: no file '{TokenPath}'.", nameof(TokenPath));
        }

        if (Token is not null && !IsValidToken(Token, out string problem))
        {
            throw new ArgumentException($"{nameof(GrpcCoordinatorClientOptions)}.{nameof(Token)} cannot be sent as a bearer token: {problem}.", nameof(Token));
        }

        // The file's token is checked where it is read.
        _ = ReadToken();
    }

    /// <summary>
    /// The token to send: <see cref="Token"/>, or the first line of <see cref="TokenPath"/>; <c>null</c> for none.
    /// </summary>
    /// <exception cref="ArgumentException">The file cannot be read or holds no usable token; the message never holds its content.</exception>
    internal string? ReadToken()
    {
        if (TokenPath is not { } path)
        {
            return Token;
        }

        string token;
        try
        {
            using var reader = File.OpenText(path);
            token = reader.ReadLine()?.Trim() ?? string.Empty;
        }
        catch (Exception ex) when (ex is IOException or UnauthorizedAccessException)
        {
            throw new ArgumentException($"{nameof(GrpcCoordinatorClientOptions)}.{nameof(TokenPath)}: '{path}' cannot be read ({ex.GetType().Name}).", nameof(TokenPath), ex);
        }

        return IsValidToken(token, out string problem)
            ? token
            : throw new ArgumentException($"{nameof(GrpcCoordinatorClientOptions)}.{nameof(TokenPath)}: the first line of '{path}' is not a usable bearer token: {problem}.", nameof(TokenPath));
    }

    /// <summary>Printable ASCII without spaces, as an HTTP header value carries it; the reason never holds the token.</summary>
    private static bool IsValidToken(string token, out string problem)
    {
        if (token.Length == 0)
        {
            problem = "it is empty";
            return false;
        }

        foreach (char c in token)
        {
            if (c is <= ' ' or > '~')
            {
                problem = "it holds a space, a control character or a non-ASCII character";
                return false;
            }
        }

        problem = string.Empty;
        return true;
    }
}
