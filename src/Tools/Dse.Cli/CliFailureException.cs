namespace Dse.Cli;

/// <summary>The command could not do its work (exit code 1); the message is the one line the user sees.</summary>
internal sealed class CliFailureException(string message, Exception? innerException = null) : Exception(message, innerException);
