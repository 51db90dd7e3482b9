using System.Text.Json.Nodes;

namespace Dse.Cli;

/// <summary>
/// <c>dse remove</c>: the operator's removal of a participant that is gone for good, through the coordinator's
/// RemoveParticipant RPC, as the coordinator host's own <c>remove</c> subcommand does.
/// </summary>
internal static class RemoveCommand
{
    public const string Usage = $"""
        Usage: dse remove --coordinator URL --id N [--tls-ca PATH] [--token-file PATH] [--json]

        Removes participant N from the cluster for good: a rollback decision drops whatever depends on its unreported
        state, and during the coordinator's recovery the removal stands in for its answer. Anything the participant
        exposed that the others cannot reconstruct may be lost (docs/coordinator.md, "Why heartbeat timeouts do not end
        recovery"). A participant that was removed already is reported as such (exit code 0, "removed": false).

          --id N               The participant id, 0 or more.
        {CoordinatorConnection.OptionsUsage}
        """;

    public static async Task<CommandResult> RunAsync(IReadOnlyList<string> args, CancellationToken cancellationToken)
    {
        const string Command = "remove";
        var arguments = CliArguments.Parse(Command, args, positionalCount: 0, options: [.. CoordinatorConnection.Options, "--id"]);
        long id = arguments.NonNegative("--id", arguments.Required("--id"));
        var (address, options) = CoordinatorConnection.Parse(Command, arguments);
        using var client = CoordinatorConnection.Connect(Command, address, options);
        bool removed;
        try
        {
            removed = await client.RemoveParticipantAsync(id, cancellationToken);
        }
        catch (DseCoordinatorException ex)
        {
            throw CoordinatorConnection.Failed(Command, address, ex);
        }

        string line = removed
            ? $"Participant {id} removed from the cluster by the coordinator at {address}."
            : $"Participant {id} was removed already; nothing changed.";
        return new CommandResult([line], new JsonObject { ["coordinator"] = address.ToString(), ["id"] = id, ["removed"] = removed });
    }
}
