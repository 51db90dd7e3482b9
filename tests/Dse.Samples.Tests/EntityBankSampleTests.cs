using Dse.Testing;
using Xunit.Abstractions;

namespace Dse.Samples.Tests;

/// <summary>The stateful-functions sample (samples/EntityBank) as a user runs it: its built program, checked by what it prints.</summary>
public class EntityBankSampleTests(ITestOutputHelper output)
{
    private static readonly TimeSpan RunTimeout = TimeSpan.FromSeconds(90);

    [Fact]
    public async Task Run_SmallWorkload_ConservesMoneyAndBooksOrdersAtomically()
    {
        var run = await BuiltProgram.RunAsync(
            "samples/EntityBank", "EntityBank.dll", ["--accounts", "50", "--transfers", "3000", "--orders", "120", "--partitions", "3"], RunTimeout);
        output.WriteLine(run.StandardOutput);
        output.WriteLine(run.StandardError);

        Assert.False(run.TimedOut);
        Assert.Equal(0, run.ExitCode);
        Assert.Contains("EntityBank: 50 accounts of 100, 3000 transfers, 3 partitions", run.StandardOutput, StringComparison.Ordinal);
        Assert.Contains("money conserved: yes (total 5000, expected 5000; negative balances: none)", run.StandardOutput, StringComparison.Ordinal);
        Assert.Contains("every order holds both or neither", run.StandardOutput, StringComparison.Ordinal);
        var orders = System.Text.RegularExpressions.Regex.Match(run.StandardOutput, @"orders: (\d+) booked, (\d+) refused");
        Assert.True(orders.Success, "no orders line");
        int booked = int.Parse(orders.Groups[1].Value, System.Globalization.CultureInfo.InvariantCulture);
        Assert.Equal(120, booked + int.Parse(orders.Groups[2].Value, System.Globalization.CultureInfo.InvariantCulture));
        Assert.InRange(booked, 1, 100);
    }

    [Fact]
    public async Task Run_UnknownOption_PrintsUsageAndExitsWithTwo()
    {
        var run = await BuiltProgram.RunAsync("samples/EntityBank", "EntityBank.dll", ["--speed", "9"], RunTimeout);
        Assert.Equal(2, run.ExitCode);
        Assert.Contains("usage: EntityBank", run.StandardError, StringComparison.Ordinal);
    }
}
