using Dse.Samples.TwoPhaseCommit;

namespace Dse.Samples.Tests;

/// <summary>The 2PC launcher's options: a quick default run of both modes, the paper's run behind <c>--full</c>.</summary>
public class TwoPhaseCommitCommandLineTests
{
    [Fact]
    public void Parse_NoArguments_QuickRunOfBothModes()
    {
        var parsed = TwoPhaseCommitCommandLine.Parse([]);

        Assert.Equal(new TwoPhaseCommitOptions().Transactions, parsed.Options.Transactions);
        Assert.True(parsed.Options.Transactions < TwoPhaseCommitOptions.PaperTransactions);
        Assert.Equal(TwoPhaseCommitMode.Both, parsed.Options.Mode);
        Assert.False(parsed.Options.TieredPgo);
        Assert.False(parsed.Options.Chaos);
        Assert.False(parsed.Quiet);
        Assert.False(parsed.Help);
        Assert.Null(parsed.JsonPath);
    }

    [Fact]
    public void Parse_Full_PaperSizedRun()
    {
        var parsed = TwoPhaseCommitCommandLine.Parse(["--full"]);

        Assert.Equal(30000, parsed.Options.Transactions);
        Assert.Equal(TwoPhaseCommitOptions.PaperTransactions, parsed.Options.Transactions);
        Assert.Equal(200, parsed.Options.EffectiveWarmUpTransactions);
        Assert.True(parsed.Options.TieredPgo);
    }

    [Fact]
    public void Parse_ChaosAlone_KeepsTheQuickDefault()
    {
        var parsed = TwoPhaseCommitCommandLine.Parse(["--chaos"]);

        Assert.True(parsed.Options.Chaos);
        Assert.Equal(new TwoPhaseCommitOptions().Transactions, parsed.Options.Transactions);
    }

    [Fact]
    public void Parse_EveryOption_SetsIt()
    {
        var parsed = TwoPhaseCommitCommandLine.Parse(
            ["--transactions", "500", "--warm-up", "7", "--clients", "3", "--group-commit-ms", "5", "--mode", "nonspec", "--chaos", "--seed", "42", "--data-dir", "d", "--json", "r.json", "--quiet"]);

        var options = parsed.Options;
        Assert.Equal(500, options.Transactions);
        Assert.Equal(7, options.EffectiveWarmUpTransactions);
        Assert.Equal(3, options.Clients);
        Assert.Equal(TimeSpan.FromMilliseconds(5), options.GroupCommit);
        Assert.Equal(TwoPhaseCommitMode.NonSpeculative, options.Mode);
        Assert.True(options.Chaos);
        Assert.Equal(42, options.Seed);
        Assert.Equal(Path.GetFullPath("d"), options.DataDirectory);
        Assert.Equal(Path.GetFullPath("r.json"), parsed.JsonPath);
        Assert.True(parsed.Quiet);
    }

    [Theory]
    [InlineData("--help")]
    [InlineData("-h")]
    public void Parse_Help_AsksForUsage(string option)
    {
        Assert.True(TwoPhaseCommitCommandLine.Parse([option]).Help);
    }

    [Theory]
    [InlineData("--full --transactions 10")]
    [InlineData("--transactions 10 --full")]
    [InlineData("--transactions 10 --transactions 20")]
    public void Parse_TransactionsGivenTwice_Throws(string commandLine)
    {
        var ex = Assert.Throws<ArgumentException>(() => TwoPhaseCommitCommandLine.Parse(commandLine.Split(' ')));

        Assert.Contains("give one of them", ex.Message, StringComparison.Ordinal);
    }

    [Theory]
    [InlineData("--transactions", "many", "not an integer")]
    [InlineData("--transactions", "0", "Transactions must be positive")]
    [InlineData("--warm-up", "-1", "WarmUpTransactions must not be negative")]
    [InlineData("--clients", "0", "Clients must be between")]
    [InlineData("--mode", "fast", "--mode must be spec, nonspec or both")]
    [InlineData("--group-commit-ms", "0", "GroupCommit must be whole milliseconds")]
    public void Parse_BadValue_ThrowsNamingIt(string option, string value, string expected)
    {
        var ex = Assert.Throws<ArgumentException>(() => TwoPhaseCommitCommandLine.Parse([option, value]));

        Assert.Contains(expected, ex.Message, StringComparison.Ordinal);
    }

    [Theory]
    [InlineData("--transactions")]
    [InlineData("--seed")]
    [InlineData("--json")]
    public void Parse_MissingValue_Throws(string option)
    {
        var ex = Assert.Throws<ArgumentException>(() => TwoPhaseCommitCommandLine.Parse([option]));

        Assert.Contains($"{option} needs a value", ex.Message, StringComparison.Ordinal);
    }

    [Fact]
    public void Parse_UnknownOption_Throws()
    {
        var ex = Assert.Throws<ArgumentException>(() => TwoPhaseCommitCommandLine.Parse(["--fast"]));

        Assert.Contains("Unknown option '--fast'", ex.Message, StringComparison.Ordinal);
    }

    [Theory]
    [InlineData(30000, 200)]
    [InlineData(2000, 200)]
    [InlineData(500, 100)]
    [InlineData(100, 20)]
    [InlineData(1, 10)]
    public void EffectiveWarmUpTransactions_Default_FifthOfTheRunFrom10To200(int transactions, int expected)
    {
        Assert.Equal(expected, new TwoPhaseCommitOptions { Transactions = transactions }.EffectiveWarmUpTransactions);
    }

    [Fact]
    public void EffectiveWarmUpTransactions_Explicit_UsedAsGiven()
    {
        Assert.Equal(0, new TwoPhaseCommitOptions { Transactions = 30000, WarmUpTransactions = 0 }.EffectiveWarmUpTransactions);
    }
}
