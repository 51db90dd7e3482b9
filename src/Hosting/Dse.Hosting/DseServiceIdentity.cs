using Dse.Grpc;
using Microsoft.Extensions.DependencyInjection;
using Microsoft.Extensions.Logging;
using Microsoft.Extensions.Options;

namespace Dse.Hosting;

/// <summary>
/// The identity of this host's speculative gRPC services: who may send them DSE headers (<c>Dse:Participants</c>,
/// <c>Dse:AcceptUnauthenticatedHeaders</c>) and the token its own outgoing DSE calls carry (<c>Dse:Token</c>,
/// <c>Dse:TokenFile</c>). Every message names the key, never a token or a line of the file.
/// </summary>
internal static class DseServiceIdentity
{
    /// <summary>The header authentication <c>Dse:Participants</c> configures, or <c>null</c> without it (any caller may send a header).</summary>
    public static DseHeaderAuthentication? HeaderAuthentication(IServiceProvider services)
    {
        var options = services.GetRequiredService<IOptions<DseHostingOptions>>().Value;
        if (options.Participants is null)
        {
            return null;
        }

        var credentials = LoadParticipants(options);
        var logger = services.GetService<ILoggerFactory>()?.CreateLogger("Dse.Grpc.DseHeaderAuthentication");
        if (logger is not null)
        {
            DseHostingLogMessages.HeadersAuthenticated(logger, credentials.ParticipantCount, credentials.Source);
            if (options.AcceptUnauthenticatedHeaders)
            {
                DseHostingLogMessages.AcceptingUnauthenticatedHeaders(logger);
            }
        }

        return new DseHeaderAuthentication(credentials, options.AcceptUnauthenticatedHeaders, logger);
    }

    /// <summary>The client interceptor hosting registers, sending <c>Dse:Token</c> with every header.</summary>
    public static DseClientInterceptor ClientInterceptor(IServiceProvider services) =>
        new(services.GetService<ILogger<DseClientInterceptor>>() ?? Microsoft.Extensions.Logging.Abstractions.NullLogger<DseClientInterceptor>.Instance,
            ReadToken(services.GetRequiredService<IOptions<DseHostingOptions>>().Value));

    /// <summary>Reads <c>Dse:Participants</c>.</summary>
    /// <exception cref="ArgumentException">The file is missing, unreadable or malformed; the message names the key, the file and the line number.</exception>
    public static DseCredentials LoadParticipants(DseHostingOptions options)
    {
        string key = DseHostingOptions.Key(nameof(DseHostingOptions.Participants));
        string path = options.Participants ?? throw new ArgumentException($"{key} is not set.", nameof(DseHostingOptions.Participants));
        if (!File.Exists(path))
        {
            throw new ArgumentException($"{key} names no file (got \"{path}\"): it must be a participants file ('participant ID sha256:HEX' lines).", nameof(DseHostingOptions.Participants));
        }

        try
        {
            return DseCredentials.Load(path);
        }
        catch (InvalidDataException ex)
        {
            // The message names the file and line number, never the line's text.
            throw new ArgumentException($"{key}: {ex.Message}", nameof(DseHostingOptions.Participants), ex);
        }
        catch (Exception ex) when (ex is IOException or UnauthorizedAccessException)
        {
            throw new ArgumentException($"{key}: '{path}' cannot be read ({ex.GetType().Name}).", nameof(DseHostingOptions.Participants), ex);
        }
    }

    /// <summary>The token of <c>Dse:Token</c> or the first line of <c>Dse:TokenFile</c>; <c>null</c> for neither.</summary>
    /// <exception cref="ArgumentException">Both are set, the file cannot be read, or the token cannot be sent; the message names the key, never the token.</exception>
    public static string? ReadToken(DseHostingOptions options)
    {
        string tokenKey = DseHostingOptions.Key(nameof(DseHostingOptions.Token));
        string fileKey = DseHostingOptions.Key(nameof(DseHostingOptions.TokenFile));
        if (options.Token is not null && options.TokenFile is not null)
        {
            throw new ArgumentException($"Set {tokenKey} or {fileKey}, not both.", nameof(DseHostingOptions.Token));
        }

        string? token = options.Token;
        string key = tokenKey;
        if (options.TokenFile is { } path)
        {
            key = fileKey;
            if (!File.Exists(path))
            {
                throw new ArgumentException($"{fileKey}: no file '{path}'.", nameof(DseHostingOptions.TokenFile));
            }

            try
            {
                using var reader = File.OpenText(path);
                token = reader.ReadLine()?.Trim() ?? string.Empty;
            }
            catch (Exception ex) when (ex is IOException or UnauthorizedAccessException)
            {
                throw new ArgumentException($"{fileKey}: '{path}' cannot be read ({ex.GetType().Name}).", nameof(DseHostingOptions.TokenFile), ex);
            }
        }

        if (token is not null && !DseCredentials.IsUsableToken(token, out string problem))
        {
            throw new ArgumentException($"{key} cannot be sent as a bearer token: {problem}.", key == tokenKey ? nameof(DseHostingOptions.Token) : nameof(DseHostingOptions.TokenFile));
        }

        return token;
    }
}
