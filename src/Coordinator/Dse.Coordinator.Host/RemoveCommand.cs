using System.Globalization;
using Dse.Coordinator.Client;

namespace Dse.Coordinator.Host;

/// <summary>
/// <c>remove --coordinator URL --id N [--tls-ca PATH] [--token-file PATH]</c>: the operator's removal of a participant that is gone for good, through the
/// coordinator's RemoveParticipant RPC. Prints what happened and exits with a code a script can test.
/// </summary>
internal static class RemoveCommand
{
    public const string Name = "remove";

    public const int ExitRemoved = 0;
    public const int ExitAlreadyRemoved = 1;
    public const int ExitUsage = 2;
    public const int ExitRefused = 4;

    public static async Task<int> RunAsync(IReadOnlyList<string> args)
    {
        if (args.Contains("-h") || args.Contains("--help"))
        {
            await Console.Out.WriteAsync(HostArguments.Usage);
            return ExitRemoved;
        }

        Uri coordinator;
        long id;
        string? authority;
        string? tokenFile;
        try
        {
            (coordinator, id, authority, tokenFile) = Parse(args);
        }
        catch (HostArgumentException ex)
        {
            await Console.Error.WriteLineAsync($"error: {ex.Message}{Environment.NewLine}{Environment.NewLine}{HostArguments.Usage}");
            return ExitUsage;
        }

        GrpcCoordinatorClient client;
        try
        {
            client = new GrpcCoordinatorClient(coordinator, new GrpcCoordinatorClientOptions { CertificateAuthorityPath = authority, TokenPath = tokenFile });
        }
        catch (ArgumentException ex)
        {
            // An unreadable --tls-ca or --token-file; the message names the file, never its content.
            await Console.Error.WriteLineAsync($"error: {Name}: {ex.Message}");
            return ExitUsage;
        }

        using var owned = client;
        try
        {
            if (await client.RemoveParticipantAsync(id))
            {
                await Console.Out.WriteLineAsync($"Participant {id} removed from the cluster by the coordinator at {coordinator}.");
                return ExitRemoved;
            }

            await Console.Out.WriteLineAsync($"Participant {id} was removed already; nothing changed.");
            return ExitAlreadyRemoved;
        }
        catch (DseCoordinatorException ex) when (ex.Code == CoordinatorErrorCode.Unavailable)
        {
            await Console.Error.WriteLineAsync($"error: the coordinator at {coordinator} is unreachable or not serving: {ex.Message}");
            return ExitRefused;
        }
        catch (DseCoordinatorException ex)
        {
            await Console.Error.WriteLineAsync($"error: the coordinator at {coordinator} refused to remove participant {id} ({ex.Code}): {ex.Message}");
            return ExitRefused;
        }
    }

    private static (Uri Coordinator, long Id, string? Authority, string? TokenFile) Parse(IReadOnlyList<string> args)
    {
        string? coordinator = null;
        string? id = null;
        string? authority = null;
        string? tokenFile = null;
        for (int i = 0; i < args.Count; i++)
        {
            string arg = args[i];
            int equals = arg.IndexOf('=', StringComparison.Ordinal);
            string name = equals > 0 ? arg[..equals] : arg;
            if (name is not ("--coordinator" or "--id" or "--tls-ca" or "--token-file"))
            {
                throw new HostArgumentException(arg.StartsWith("--", StringComparison.Ordinal)
                    ? $"{Name}: unknown option {HostArguments.Shown(name)}."
                    : $"{Name}: unexpected argument {HostArguments.Shown(arg)}.");
            }

            string value;
            if (equals > 0)
            {
                value = arg[(equals + 1)..];
            }
            else if (i + 1 < args.Count)
            {
                value = args[++i];
            }
            else
            {
                throw new HostArgumentException($"{Name}: {name} needs a value.");
            }

            ref string? slot = ref name == "--coordinator" ? ref coordinator
                : ref name == "--id" ? ref id
                : ref name == "--tls-ca" ? ref authority
                : ref tokenFile;
            if (slot is not null)
            {
                throw new HostArgumentException($"{Name}: {name} is given twice.");
            }

            slot = value;
        }

        if (coordinator is null || id is null)
        {
            throw new HostArgumentException($"{Name}: {(coordinator is null ? "--coordinator" : "--id")} is required.");
        }

        if (!Uri.TryCreate(coordinator, UriKind.Absolute, out var address) || (address.Scheme != Uri.UriSchemeHttp && address.Scheme != Uri.UriSchemeHttps))
        {
            throw new HostArgumentException($"{Name}: --coordinator must be an http or https URL such as http://127.0.0.1:5180 (got {HostArguments.Shown(coordinator)}).");
        }

        if (!long.TryParse(id, NumberStyles.None, CultureInfo.InvariantCulture, out long objectId))
        {
            throw new HostArgumentException($"{Name}: --id must be a participant id, a whole number of 0 or more (got {HostArguments.Shown(id)}).");
        }

        if (authority is not null && (address.Scheme != Uri.UriSchemeHttps || !File.Exists(authority)))
        {
            throw new HostArgumentException(address.Scheme != Uri.UriSchemeHttps
                ? $"{Name}: --tls-ca needs an https --coordinator (got {HostArguments.Shown(coordinator)})."
                : $"{Name}: --tls-ca: no file {HostArguments.Shown(authority)}.");
        }

        if (tokenFile is not null && !File.Exists(tokenFile))
        {
            throw new HostArgumentException($"{Name}: --token-file: no file {HostArguments.Shown(tokenFile)}.");
        }

        return (address, objectId, authority, tokenFile);
    }
}
