using Dse.Coordinator.Client;

namespace Dse.Cli;

/// <summary>
/// The options every coordinator command shares (<c>--coordinator URL [--tls-ca PATH] [--token-file PATH]</c>),
/// checked as the coordinator host's <c>remove</c> checks them, and the client they make.
/// </summary>
internal static class CoordinatorConnection
{
    /// <summary>The options of a coordinator command, besides its own.</summary>
    public static readonly string[] Options = ["--coordinator", "--tls-ca", "--token-file"];

    public const string OptionsUsage = """
          --coordinator URL    The coordinator host, for example http://127.0.0.1:5180 or https://coord:5180.
          --tls-ca PATH        For an https coordinator: trust only this PEM CA certificate (default: the machine's roots).
          --token-file PATH    A file whose first line is an operator's token, for a host with --participants.
          --json               Print one JSON document instead of text.
        """;

    /// <summary>The coordinator's address, checked.</summary>
    /// <exception cref="CliUsageException">An option is missing or invalid, or a named file does not exist.</exception>
    public static (Uri Address, GrpcCoordinatorClientOptions Options) Parse(string command, CliArguments arguments)
    {
        string coordinator = arguments.Required("--coordinator");
        string? authority = arguments.Optional("--tls-ca");
        string? tokenFile = arguments.Optional("--token-file");
        if (!Uri.TryCreate(coordinator, UriKind.Absolute, out var address) || (address.Scheme != Uri.UriSchemeHttp && address.Scheme != Uri.UriSchemeHttps))
        {
            throw new CliUsageException($"{command}: --coordinator must be an http or https URL such as http://127.0.0.1:5180 (got {CliArguments.Shown(coordinator)}).");
        }

        if (authority is not null && address.Scheme != Uri.UriSchemeHttps)
        {
            throw new CliUsageException($"{command}: --tls-ca needs an https --coordinator (got {CliArguments.Shown(coordinator)}).");
        }

        foreach (var (flag, path) in new[] { ("--tls-ca", authority), ("--token-file", tokenFile) })
        {
            if (path is not null && !File.Exists(path))
            {
                throw new CliUsageException($"{command}: {flag}: no file {CliArguments.Shown(path)}.");
            }
        }

        return (address, new GrpcCoordinatorClientOptions { CertificateAuthorityPath = authority, TokenPath = tokenFile });
    }

    /// <summary>A client of the coordinator at <paramref name="address"/>.</summary>
    /// <exception cref="CliUsageException">The CA certificate or the token file cannot be read; the message names the file, never its content.</exception>
    public static GrpcCoordinatorClient Connect(string command, Uri address, GrpcCoordinatorClientOptions options)
    {
        try
        {
            return new GrpcCoordinatorClient(address, options);
        }
        catch (ArgumentException ex)
        {
            throw new CliUsageException($"{command}: {ex.Message}");
        }
    }

    /// <summary>The one-line failure for a refused or failed call.</summary>
    public static CliFailureException Failed(string command, Uri address, DseCoordinatorException ex) =>
        new(ex.Code == CoordinatorErrorCode.Unavailable
            ? $"{command}: the coordinator at {address} is unreachable or not serving: {OneLine(ex.Message)}"
            : $"{command}: the coordinator at {address} refused ({ex.Code}): {OneLine(ex.Message)}", ex);

    private static string OneLine(string message) => message.ReplaceLineEndings(" ");
}
