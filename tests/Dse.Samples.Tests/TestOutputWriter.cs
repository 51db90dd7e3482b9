using System.Text;
using Xunit.Abstractions;

namespace Dse.Samples.Tests;

/// <summary>A line writer into xunit's test output, for a sample's progress lines.</summary>
internal sealed class TestOutputWriter(ITestOutputHelper output) : TextWriter
{
    private readonly StringBuilder _line = new();

    public override Encoding Encoding => Encoding.UTF8;

    public override void Write(char value)
    {
        lock (_line)
        {
            if (value == '\n')
            {
                output.WriteLine(_line.ToString().TrimEnd('\r'));
                _line.Clear();
            }
            else
            {
                _line.Append(value);
            }
        }
    }
}
