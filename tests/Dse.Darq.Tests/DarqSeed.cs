using System.Globalization;
using Xunit.Abstractions;
namespace Dse.Darq.Tests;

/// <summary>
/// Seeds of the randomized DARQ crash tests: <c>DSE_DARQ_SEED</c> replays one, otherwise each run draws a fresh one. A
/// failure message carries the seed and the command that replays it.
/// </summary>
internal static class DarqSeed
{
    public const string Variable = "DSE_DARQ_SEED";

    public static int Pick(ITestOutputHelper output, string testName)
    {
        string? fixedSeed = Environment.GetEnvironmentVariable(Variable);
        int seed = string.IsNullOrWhiteSpace(fixedSeed) ? Random.Shared.Next() : int.Parse(fixedSeed, CultureInfo.InvariantCulture);
        output.WriteLine(Replay(seed, testName));
        return seed;
    }

    public static string Replay(int seed, string testName)
        => $"seed {seed}; replay: {Variable}={seed} dotnet test tests/Dse.Darq.Tests -c Release --filter FullyQualifiedName~{testName}";
}
