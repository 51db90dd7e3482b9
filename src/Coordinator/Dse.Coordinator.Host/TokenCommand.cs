using System.Globalization;
using Dse.Grpc;

namespace Dse.Coordinator.Host;

/// <summary>
/// <c>token (--participant N | --operator NAME)</c>: makes a new bearer token and prints it, then the participants-file
/// line that holds its hash. The token is printed once, to standard output only.
/// </summary>
internal static class TokenCommand
{
    public const string Name = "token";

    public const int ExitOk = 0;
    public const int ExitUsage = 2;

    public static async Task<int> RunAsync(IReadOnlyList<string> args)
    {
        if (args.Contains("-h") || args.Contains("--help"))
        {
            await Console.Out.WriteAsync(HostArguments.Usage);
            return ExitOk;
        }

        string who;
        try
        {
            who = Parse(args);
        }
        catch (HostArgumentException ex)
        {
            await Console.Error.WriteLineAsync($"error: {ex.Message}{Environment.NewLine}{Environment.NewLine}{HostArguments.Usage}");
            return ExitUsage;
        }

        string token = DseCredentials.CreateToken();
        await Console.Out.WriteLineAsync(token);
        await Console.Out.WriteLineAsync($"{who} {DseCredentials.HashToken(token)}");
        return ExitOk;
    }

    /// <summary>The first two fields of the participants-file line: <c>participant N</c> or <c>operator NAME</c>.</summary>
    private static string Parse(IReadOnlyList<string> args)
    {
        if (args.Count != 2 || args[0] is not ("--participant" or "--operator"))
        {
            throw new HostArgumentException($"{Name}: pass --participant N or --operator NAME.");
        }

        if (args[0] == "--participant")
        {
            return long.TryParse(args[1], NumberStyles.None, CultureInfo.InvariantCulture, out long id)
                ? $"participant {id}"
                : throw new HostArgumentException($"{Name}: --participant must be a participant id, a whole number of 0 or more (got {HostArguments.Shown(args[1])}).");
        }

        if (args[1].Length == 0)
        {
            throw new HostArgumentException($"{Name}: --operator needs a name.");
        }

        foreach (char c in args[1])
        {
            if (!char.IsAsciiLetterOrDigit(c) && c is not ('-' or '_' or '.'))
            {
                throw new HostArgumentException($"{Name}: --operator must be a name of letters, digits, '-', '_' and '.' (got {HostArguments.Shown(args[1])}).");
            }
        }

        return $"operator {args[1]}";
    }
}
