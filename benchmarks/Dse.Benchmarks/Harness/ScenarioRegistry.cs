using Dse.Benchmarks.Scenarios;

namespace Dse.Benchmarks.Harness;

/// <summary>Every scenario the harness knows. A new scenario is one class plus one line here.</summary>
public static class ScenarioRegistry
{
    /// <summary>The scenarios, in the order <c>list</c> shows them.</summary>
    public static IReadOnlyList<IScenario> All { get; } =
    [
        new PrimitivesScenario(),
        new CoordinatorScenario(),
        new DarqProducerScenario(),
        new DarqStepScenario(),
        new DarqStepPartsScenario(),
        new DarqDeliveryScenario(),
        new DarqLatencyScenario(),
        new DarqReflectScenario(),
        new InterceptorScenario(),
        new TwoPhaseCommitScenario(),
        new CommitPoolScenario(),
    ];

    /// <summary>Finds a scenario by name (ordinal, case-insensitive); <c>null</c> if there is none.</summary>
    public static IScenario? Find(string name)
    {
        foreach (var s in All)
        {
            if (string.Equals(s.Name, name, StringComparison.OrdinalIgnoreCase))
            {
                return s;
            }
        }

        return null;
    }
}
