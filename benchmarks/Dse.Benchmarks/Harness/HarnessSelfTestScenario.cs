namespace Dse.Benchmarks.Harness;

/// <summary>
/// A scenario for the harness's own tests, not listed and not a measurement: with <see cref="ModeVariable"/> unset it
/// returns one value at once; <c>fail</c> makes it throw, <c>crash</c> makes it throw on a thread of its own (an
/// exception nobody awaits), so the tests can check that a failure ends in a failed RESULT line and a non-zero exit.
/// </summary>
public sealed class HarnessSelfTestScenario : IScenario
{
    /// <summary>The environment variable that selects the failure: <c>fail</c> or <c>crash</c>.</summary>
    public const string ModeVariable = "DSE_BENCH_SELF_TEST";

    /// <summary>The message of the exception it throws.</summary>
    public const string FailureMessage = "self-test failure requested";

    /// <inheritdoc />
    public string Name => "harness-self-test";

    /// <inheritdoc />
    public string Description => $"Tests the harness: succeeds at once, or fails as {ModeVariable}=fail|crash asks.";

    /// <inheritdoc />
    public Task<ScenarioResults> RunAsync(ScenarioContext context)
    {
        ArgumentNullException.ThrowIfNull(context);
        switch (Environment.GetEnvironmentVariable(ModeVariable))
        {
            case "fail":
                throw new InvalidOperationException(FailureMessage);
            case "crash":
                var thread = new Thread(() => throw new InvalidOperationException(FailureMessage)) { IsBackground = false };
                thread.Start();
                thread.Join();
                // Not reached: the process ends in the harness's handler for unhandled exceptions.
                return Task.FromResult(new ScenarioResults());
            default:
                return Task.FromResult(new ScenarioResults().Add("ok", 1));
        }
    }
}
