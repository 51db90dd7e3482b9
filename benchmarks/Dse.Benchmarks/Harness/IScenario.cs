namespace Dse.Benchmarks.Harness;

/// <summary>
/// One end-to-end benchmark scenario run by the harness (<c>dotnet run -c Release --project benchmarks/Dse.Benchmarks -- NAME</c>).
/// Add a scenario by implementing this interface and listing an instance in <see cref="ScenarioRegistry"/>.
/// </summary>
public interface IScenario
{
    /// <summary>The command-line name: lowercase letters, digits and dashes (<c>primitives</c>, <c>darq-producer</c>).</summary>
    string Name { get; }

    /// <summary>One line saying what the scenario measures, shown by <c>list</c>.</summary>
    string Description { get; }

    /// <summary>Runs the scenario and returns its key/values, in the order they are printed.</summary>
    Task<ScenarioResults> RunAsync(ScenarioContext context);
}
