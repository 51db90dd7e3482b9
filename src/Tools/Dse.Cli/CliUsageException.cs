namespace Dse.Cli;

/// <summary>The command line is invalid (exit code 2); the message says which argument and why.</summary>
internal sealed class CliUsageException(string message) : Exception(message);
