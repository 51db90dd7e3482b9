using System.Text.Json.Nodes;

namespace Dse.Cli;

/// <summary>What a command found: the lines a person reads, and the same facts as one JSON document for scripts.</summary>
/// <param name="Text">The human-readable output, one line per entry of the list.</param>
/// <param name="Json">The output of <c>--json</c>.</param>
internal sealed record CommandResult(IReadOnlyList<string> Text, JsonObject Json);
