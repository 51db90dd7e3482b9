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
        new TravelScenario(),
        new FunctionsEngineScenario(),
        new CommitPoolScenario(),
    ];

    /// <summary>Scenarios that run by name but are not listed, measured or smoke-run: the harness's own test scenario.</summary>
    public static IReadOnlyList<IScenario> Unlisted { get; } = [new HarnessSelfTestScenario()];

    /// <summary>Finds a scenario, listed or not, by name (ordinal, case-insensitive); <c>null</c> if there is none.</summary>
    public static IScenario? Find(string name)
    {
        foreach (var list in new[] { All, Unlisted })
        {
            foreach (var s in list)
            {
                if (string.Equals(s.Name, name, StringComparison.OrdinalIgnoreCase))
                {
                    return s;
                }
            }
        }

        return null;
    }
}
