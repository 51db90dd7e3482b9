using System.Text.Json.Nodes;

namespace Dse.Cli;

/// <summary><c>dse header decode BASE64</c>: a DSE header (docs/header-format.md) decoded by LibDse's own parser.</summary>
internal static class HeaderDecodeCommand
{
    public const string Usage = """
        Usage: dse header decode BASE64 [--json]

        Decodes a DSE header (docs/header-format.md) with LibDse's parser and prints its kind, world-line and origin
        (a StateObject's action) or dependency set (an sthread). BASE64 is the header's bytes in base64, standard or
        URL-safe, padded or not (gRPC carries it in the dse-header-bin metadata entry).
        """;

    public static CommandResult Run(IReadOnlyList<string> args)
    {
        var arguments = CliArguments.Parse("header decode", args, positionalCount: 1, options: []);
        byte[] bytes = DecodeBase64(arguments.Positional[0]);
        if (!DseHeader.TryParse(bytes, out var header, out string error))
        {
            throw new CliFailureException($"header decode: the {bytes.Length} bytes are not a DSE header: {error}");
        }

        var json = new JsonObject
        {
            ["kind"] = header.Kind.ToString(),
            ["worldLine"] = header.WorldLine,
            ["length"] = bytes.Length,
        };
        var text = new List<string> { $"kind        {header.Kind}", $"world-line  {header.WorldLine}" };
        if (header.Kind == DseHeaderKind.Origin)
        {
            var origin = header.Origin;
            json["objectId"] = origin.ObjectId;
            json["version"] = origin.Version;
            text.Add($"object      {origin.ObjectId}");
            text.Add($"version     {origin.Version}");
        }
        else
        {
            var dependencies = new JsonArray();
            text.Add($"dependencies {header.DependencyCount}");
            foreach (var dependency in header.Dependencies)
            {
                dependencies.Add(new JsonObject { ["objectId"] = dependency.ObjectId, ["version"] = dependency.Version });
                text.Add($"  object {dependency.ObjectId} version {dependency.Version}");
            }

            json["dependencies"] = dependencies;
        }

        text.Add($"length      {bytes.Length} bytes");
        return new CommandResult(text, json);
    }

    /// <summary>Standard or URL-safe base64, with or without padding.</summary>
    private static byte[] DecodeBase64(string value)
    {
        string standard = value.Trim().Replace('-', '+').Replace('_', '/');
        if (standard.Length % 4 != 0)
        {
            standard = standard.PadRight(standard.Length + (4 - (standard.Length % 4)), '=');
        }

        try
        {
            byte[] bytes = Convert.FromBase64String(standard);
            return bytes.Length > 0 ? bytes : throw new CliUsageException("header decode: the base64 holds no bytes (an empty header means \"no header\").");
        }
        catch (FormatException)
        {
            throw new CliUsageException($"header decode: {CliArguments.Shown(Truncated(value))} is not base64.");
        }
    }

    private static string Truncated(string value) => value.Length <= 40 ? value : value[..40] + "...";
}
