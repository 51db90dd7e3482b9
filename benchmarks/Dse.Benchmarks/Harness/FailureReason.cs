using System.Diagnostics;
using System.Reflection;
using System.Text;

namespace Dse.Benchmarks.Harness;

/// <summary>
/// Says on one line why a scenario failed: the exception's type and message (of the one inner exception of a wrapper),
/// and the innermost method of this repository it came through, so a failed smoke run points at the code without a
/// stack dump.
/// </summary>
public static class FailureReason
{
    /// <summary>One line: <c>Type: message (in Class.Method)</c>.</summary>
    public static string Describe(Exception exception)
    {
        ArgumentNullException.ThrowIfNull(exception);
        var e = Unwrap(exception);
        var line = new StringBuilder(e.GetType().Name).Append(": ");
        foreach (char c in e.Message)
        {
            line.Append(char.IsControl(c) ? ' ' : c);
        }

        string? origin = Origin(e);
        if (origin is not null)
        {
            line.Append(" (in ").Append(origin).Append(')');
        }

        return line.ToString();
    }

    private static Exception Unwrap(Exception e)
    {
        while (true)
        {
            switch (e)
            {
                case AggregateException { InnerExceptions.Count: 1 } a:
                    e = a.InnerExceptions[0];
                    break;
                case TargetInvocationException { InnerException: { } inner }:
                    e = inner;
                    break;
                default:
                    return e;
            }
        }
    }

    // The first frame (from the throw outwards) in a Dse type, with an async method's state machine named after its method.
    private static string? Origin(Exception e)
    {
        foreach (var frame in new StackTrace(e, fNeedFileInfo: false).GetFrames())
        {
            var type = frame.GetMethod()?.DeclaringType;
            if (type?.Namespace is null || !type.Namespace.StartsWith("Dse", StringComparison.Ordinal))
            {
                continue;
            }

            string method = frame.GetMethod()!.Name;
            while (type.Name.StartsWith('<') && type.DeclaringType is not null)
            {
                // <CallerAsync>d__12.MoveNext is the async method CallerAsync; <>c.<RunAsync>b__5_0 a lambda in RunAsync.
                method = SourceName(type.Name) ?? SourceName(method) ?? method;
                type = type.DeclaringType;
            }

            return type.Name + "." + (SourceName(method) ?? method);
        }

        return null;
    }

    // The name between the angle brackets of a compiler-generated name, or null if there is none.
    private static string? SourceName(string generated)
    {
        int close = generated.IndexOf('>', StringComparison.Ordinal);
        return generated.StartsWith('<') && close > 1 ? generated[1..close] : null;
    }
}
