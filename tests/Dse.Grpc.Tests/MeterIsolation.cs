namespace Dse.Grpc.Tests;

/// <summary>
/// Tests that read a process-wide instrument (a <see cref="System.Diagnostics.Metrics.MeterListener"/> sees every
/// measurement in the process) run alone: a test class running in parallel could add to the count they check.
/// </summary>
[CollectionDefinition(Name, DisableParallelization = true)]
public sealed class MeterIsolation
{
    public const string Name = "Process-wide meters";
}
