namespace Dse.Charts;

/// <summary>A results file that cannot be charted; the message names the file and the field that was wrong.</summary>
internal sealed class ChartInputException : Exception
{
    public ChartInputException(string file, string field, string problem, Exception? inner = null)
        : base($"{file}: {field}: {problem}", inner)
    {
        File = file;
        Field = field;
    }

    /// <summary>The results file, as it was given.</summary>
    public string File { get; }

    /// <summary>The JSON path of the offending field (for example <c>results.spec_mean_ms</c>).</summary>
    public string Field { get; }
}
