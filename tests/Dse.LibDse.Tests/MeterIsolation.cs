namespace Dse.Tests;

/// <summary>
/// Tests that turn a process-wide instrument on (a <see cref="System.Diagnostics.Metrics.MeterListener"/> enables it for
/// every StateObject in the process) run alone: the StateObjects of a test running in parallel would be timed too.
/// </summary>
[CollectionDefinition(Name, DisableParallelization = true)]
public sealed class MeterIsolation
{
    public const string Name = "Process-wide meters";
}
