using Dse.Samples.Counter;

namespace Dse.Samples.Tests;

/// <summary>The Counter sample's options: a quick default, longer runs through <c>--requests</c>.</summary>
public class CounterCommandLineTests
{
    [Fact]
    public void Parse_NoArguments_DefaultRequestsAndAppDefaults()
    {
        var parsed = CounterCommandLine.Parse([]);

        Assert.Equal(200, parsed.Requests);
        Assert.Equal(CounterCommandLine.DefaultRequests, parsed.Requests);
        Assert.Equal(TimeSpan.FromMilliseconds(5), parsed.Options.WriteLatency);
        Assert.Equal(TimeSpan.FromMilliseconds(10), parsed.Options.GroupCommitPeriod);
        Assert.Null(parsed.Options.DataDirectory);
        Assert.False(parsed.Help);
    }

    [Fact]
    public void Parse_EveryOption_SetsIt()
    {
        var parsed = CounterCommandLine.Parse(["--requests", "5000", "--latency-ms", "2.5", "--period-ms", "20", "--data-dir", "d"]);

        Assert.Equal(5000, parsed.Requests);
        Assert.Equal(TimeSpan.FromMilliseconds(2.5), parsed.Options.WriteLatency);
        Assert.Equal(TimeSpan.FromMilliseconds(20), parsed.Options.GroupCommitPeriod);
        Assert.Equal("d", parsed.Options.DataDirectory);
    }

    [Theory]
    [InlineData("--help")]
    [InlineData("-h")]
    public void Parse_Help_AsksForUsage(string option)
    {
        Assert.True(CounterCommandLine.Parse([option]).Help);
    }

    [Theory]
    [InlineData("--requests", "0", "--requests must be a positive integer")]
    [InlineData("--requests", "lots", "--requests must be a positive integer")]
    [InlineData("--latency-ms", "slow", "is not a number of milliseconds")]
    [InlineData("--latency-ms", "-1", "is not a number of milliseconds")]
    [InlineData("--period-ms", "0", "--period-ms must be positive")]
    public void Parse_BadValue_ThrowsNamingIt(string option, string value, string expected)
    {
        var ex = Assert.Throws<ArgumentException>(() => CounterCommandLine.Parse([option, value]));

        Assert.Contains(expected, ex.Message, StringComparison.Ordinal);
    }

    [Fact]
    public void Parse_MissingValue_Throws()
    {
        var ex = Assert.Throws<ArgumentException>(() => CounterCommandLine.Parse(["--requests"]));

        Assert.Contains("--requests needs a value", ex.Message, StringComparison.Ordinal);
    }

    [Fact]
    public void Parse_UnknownOption_Throws()
    {
        var ex = Assert.Throws<ArgumentException>(() => CounterCommandLine.Parse(["--chaos"]));

        Assert.Contains("Unknown option '--chaos'", ex.Message, StringComparison.Ordinal);
    }
}
