using System.Text;
using Grpc.Core;

namespace Dse.Fuzz.Tests;

/// <summary>
/// The answers of a gRPC fuzz run that break the contract without ending it: UNKNOWN or INTERNAL (an exception the service
/// did not map to a documented status) and DEADLINE_EXCEEDED (a hang). The test fails on them at the end, listing one
/// example per method, status and message, with the input that caused it.
/// </summary>
internal sealed class GrpcFindings
{
    private readonly Dictionary<string, (int Count, string Example)> _findings = new(StringComparer.Ordinal);

    public int Count => _findings.Values.Sum(f => f.Count);

    /// <summary>Whether <paramref name="status"/> is a finding rather than a documented answer.</summary>
    public static bool IsFinding(StatusCode status) => status is StatusCode.Unknown or StatusCode.Internal or StatusCode.DeadlineExceeded;

    /// <summary>Records the outcome when it is a finding; returns whether it was.</summary>
    public bool Check(string method, CallOutcome outcome, byte[] request, string how, int seed, string? headerHex = null)
    {
        if (!IsFinding(outcome.Status))
        {
            return false;
        }

        // Messages carry numbers (addresses, ids): group by their shape.
        string shape = new(outcome.Detail.Select(c => char.IsDigit(c) ? '#' : c).Take(120).ToArray());
        string key = $"{method} {outcome.Status} \"{shape}\"";
        string example = $"seed {seed}; request {CodecCheck.Hex(request)}{(headerHex is null ? "" : $"; dse-header-bin {headerHex}")}; {how}; detail: {outcome.Detail}";
        _findings[key] = _findings.TryGetValue(key, out var found) ? (found.Count + 1, found.Example) : (1, example);
        return true;
    }

    /// <summary>Fails the test when anything was recorded, listing the exceptions the servers logged (their stacks name the place).</summary>
    public void AssertNone(FuzzRun run, params Dse.Testing.LogCapture[] serverLogs)
    {
        if (_findings.Count == 0)
        {
            return;
        }

        var report = new StringBuilder($"{run.Target}: {Count} answers broke the contract (UNKNOWN, INTERNAL or DEADLINE_EXCEEDED) in {run.Inputs} inputs:\n");
        foreach (var (key, (count, example)) in _findings.OrderBy(f => f.Key, StringComparer.Ordinal))
        {
            report.AppendLine($"- {key} x{count}\n  e.g. {example}");
        }

        var exceptions = serverLogs.SelectMany(l => l.Entries).Where(e => e.Exception is not null)
            .GroupBy(e => $"{e.Exception!.GetType().FullName}: {new string(e.Exception.Message.Select(c => char.IsDigit(c) ? '#' : c).ToArray())}", StringComparer.Ordinal);
        foreach (var group in exceptions.Take(10))
        {
            var stack = group.First().Exception!.ToString().Split('\n').Take(8);
            report.AppendLine($"server exception x{group.Count()}: {string.Join("\n    ", stack)}");
        }

        report.AppendLine("(a gRPC input's effect can depend on the inputs before it: replay the run)");
        report.AppendLine(run.ReplayHint(run.Seed, run.Inputs));
        Assert.Fail(report.ToString());
    }
}
