using System.Diagnostics;

namespace Dse.Testing;

/// <summary>
/// Runs the dotnet CLI (pack, new, test) as a user would, in a clean environment: no MSBuild variables inherited from
/// the test host, no build servers or reused nodes left running afterwards, no telemetry or first-run banner. A run
/// that outlasts its timeout is killed with its process tree.
/// </summary>
public static class DotnetCommand
{
    /// <summary>Runs <c>dotnet <paramref name="arguments"/></c> in <paramref name="workingDirectory"/>.</summary>
    /// <param name="environment">Further variables to set for this run.</param>
    public static async Task<ProgramRun> RunAsync(string workingDirectory, IReadOnlyList<string> arguments, TimeSpan timeout,
        IReadOnlyDictionary<string, string>? environment = null)
    {
        var start = new ProcessStartInfo(BuiltProgram.DotnetMuxer())
        {
            WorkingDirectory = workingDirectory,
            RedirectStandardOutput = true,
            RedirectStandardError = true,
            UseShellExecute = false,
        };
        foreach (string argument in arguments)
        {
            start.ArgumentList.Add(argument);
        }

        // The test host may run inside an MSBuild or VSTest process whose variables would redirect a child's build.
        foreach (string name in start.Environment.Keys.Where(IsInheritedBuildVariable).ToList())
        {
            start.Environment.Remove(name);
        }

        start.Environment["DOTNET_CLI_TELEMETRY_OPTOUT"] = "1";
        start.Environment["DOTNET_NOLOGO"] = "1";
        start.Environment["DOTNET_SKIP_FIRST_TIME_EXPERIENCE"] = "1";
        start.Environment["DOTNET_CLI_DO_NOT_USE_MSBUILD_SERVER"] = "1";
        start.Environment["MSBUILDDISABLENODEREUSE"] = "1";
        start.Environment["UseSharedCompilation"] = "false";
        foreach (var (name, value) in environment ?? new Dictionary<string, string>())
        {
            start.Environment[name] = value;
        }

        return await BuiltProgram.RunToEndAsync(start, $"dotnet {string.Join(' ', arguments)}", timeout).ConfigureAwait(false);
    }

    private static bool IsInheritedBuildVariable(string name) =>
        name.StartsWith("MSBuild", StringComparison.OrdinalIgnoreCase)
        || name.StartsWith("VSTEST", StringComparison.OrdinalIgnoreCase);
}
