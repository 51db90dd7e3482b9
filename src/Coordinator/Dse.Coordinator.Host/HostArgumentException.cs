namespace Dse.Coordinator.Host;

/// <summary>The command line is invalid; the message says which argument and why.</summary>
internal sealed class HostArgumentException(string message) : Exception(message);
