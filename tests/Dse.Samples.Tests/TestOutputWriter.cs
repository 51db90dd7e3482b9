using System.Text;
using Xunit.Abstractions;

namespace Dse.Samples.Tests;

/// <summary>A line writer into xunit's test output, for a sample's progress lines; it also keeps the lines, in order.</summary>
internal sealed class TestOutputWriter(ITestOutputHelper output) : TextWriter
{
    private readonly StringBuilder _line = new();
    private readonly List<string> _lines = [];

    public override Encoding Encoding => Encoding.UTF8;

    /// <summary>A copy of the complete lines written so far.</summary>
    public IReadOnlyList<string> Lines
    {
        get
        {
            lock (_line)
            {
                return _lines.ToArray();
            }
        }
    }

    public override void Write(char value)
    {
        lock (_line)
        {
            if (value == '\n')
            {
                string line = _line.ToString().TrimEnd('\r');
                _lines.Add(line);
                output.WriteLine(line);
                _line.Clear();
            }
            else
            {
                _line.Append(value);
            }
        }
    }
}
