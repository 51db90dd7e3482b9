using Dse.Samples.TravelReservation;

namespace Dse.Samples.Tests;

/// <summary>The travel launcher's command line: defaults, each option, and refusals naming what was wrong.</summary>
public class TravelReservationCommandLineTests
{
    [Fact]
    public void Parse_NoArguments_TheQuickTableOfBothModes()
    {
        var options = TravelCommandLine.Parse([]).Options;

        Assert.Equal([1, 2, 3, 4, 5], options.Services);
        Assert.Equal(10, options.Rate);
        Assert.Equal(TimeSpan.FromSeconds(3), options.Duration);
        Assert.Equal(80, options.WarmUpTrips);
        Assert.Equal(30, options.TripsPerConfiguration);
        Assert.Equal(TravelMode.Both, options.Mode);
        Assert.False(options.Chaos);
        Assert.Null(options.Seed);
        Assert.Equal(50, options.Items);
        Assert.Equal(TimeSpan.FromMilliseconds(10), options.GroupCommit);
        Assert.Null(options.DataDirectory);
    }

    [Fact]
    public void EffectiveCapacity_Default_RoomForAnOrdinaryItemsShareButNotThePopularOnes()
    {
        var options = new TravelOptions();

        // 230 trips ask the first service; the popular item draws a twentieth (11.5), an ordinary one about 4.5.
        int capacity = options.EffectiveCapacity;

        Assert.Equal(7, capacity);
        Assert.True(capacity < (options.WarmUpTrips + (options.TripsPerConfiguration * 5)) * TripPlanner.PopularShare);
    }

    [Fact]
    public void Parse_EveryOption_SetsIt()
    {
        var commandLine = TravelCommandLine.Parse(
        [
            "--services", "3", "--rate", "2.5", "--duration", "4", "--warm-up", "0", "--mode", "nonspec", "--chaos", "--seed", "42",
            "--items", "7", "--capacity", "3", "--group-commit-ms", "5", "--data-dir", "runs", "--quiet",
        ]);
        var options = commandLine.Options;

        Assert.Equal([3], options.Services);
        Assert.Equal(2.5, options.Rate);
        Assert.Equal(TimeSpan.FromSeconds(4), options.Duration);
        Assert.Equal(10, options.TripsPerConfiguration);
        Assert.Equal(0, options.WarmUpTrips);
        Assert.Equal(TravelMode.NonSpeculative, options.Mode);
        Assert.True(options.Chaos);
        Assert.Equal(42, options.Seed);
        Assert.Equal(7, options.Items);
        Assert.Equal(3, options.EffectiveCapacity);
        Assert.Equal(TimeSpan.FromMilliseconds(5), options.GroupCommit);
        Assert.Equal(Path.GetFullPath("runs"), options.DataDirectory);
        Assert.True(commandLine.Quiet);
        Assert.False(commandLine.Help);
    }

    [Theory]
    [InlineData("1..5", new[] { 1, 2, 3, 4, 5 })]
    [InlineData("2..3", new[] { 2, 3 })]
    [InlineData("4", new[] { 4 })]
    [InlineData("5,1,3", new[] { 5, 1, 3 })]
    public void Parse_ServicesList_TheTripSizesInOrder(string value, int[] expected)
    {
        Assert.Equal(expected, TravelCommandLine.Parse(["--services", value]).Options.Services);
    }

    [Theory]
    [InlineData("--services", "0", "1 to 5")]
    [InlineData("--services", "6", "1 to 5")]
    [InlineData("--services", "1..9", "1 to 5")]
    [InlineData("--services", "3..1", "empty")]
    [InlineData("--services", "1..x", "not an integer")]
    [InlineData("--rate", "0", "Rate")]
    [InlineData("--rate", "ten", "not a number")]
    [InlineData("--duration", "0", "--duration")]
    [InlineData("--duration", "1e300", "--duration")]
    [InlineData("--mode", "fast", "spec, nonspec or both")]
    [InlineData("--items", "0", "Items")]
    [InlineData("--capacity", "0", "Capacity")]
    [InlineData("--group-commit-ms", "0", "GroupCommit")]
    [InlineData("--warm-up", "-1", "WarmUpTrips")]
    public void Parse_BadValue_ArgumentExceptionNamingIt(string option, string value, string named)
    {
        var error = Assert.ThrowsAny<ArgumentException>(() => TravelCommandLine.Parse([option, value]));

        Assert.Contains(named, error.Message, StringComparison.Ordinal);
    }

    [Fact]
    public void Parse_UnknownOptionOrMissingValue_ArgumentException()
    {
        Assert.Contains("'--fast'", Assert.Throws<ArgumentException>(() => TravelCommandLine.Parse(["--fast"])).Message, StringComparison.Ordinal);
        Assert.Contains("--rate needs a value", Assert.Throws<ArgumentException>(() => TravelCommandLine.Parse(["--rate"])).Message, StringComparison.Ordinal);
    }

    [Fact]
    public void ParseOrExplain_Help_PrintsUsageAndExitsZero()
    {
        using var output = new StringWriter();
        using var error = new StringWriter();

        var (commandLine, exitCode) = TravelCommandLine.ParseOrExplain(["--help"], output, error);

        Assert.Null(commandLine);
        Assert.Equal(0, exitCode);
        Assert.Equal(TravelCommandLine.Usage, output.ToString());
        Assert.Empty(error.ToString());
    }

    [Fact]
    public void ParseOrExplain_BadOption_PrintsTheErrorAndUsageAndExitsTwo()
    {
        using var output = new StringWriter();
        using var error = new StringWriter();

        var (commandLine, exitCode) = TravelCommandLine.ParseOrExplain(["--rate", "-1"], output, error);

        Assert.Null(commandLine);
        Assert.Equal(2, exitCode);
        Assert.StartsWith("error: ", error.ToString(), StringComparison.Ordinal);
        Assert.Contains("usage:", error.ToString(), StringComparison.Ordinal);
        Assert.Empty(output.ToString());
    }

    [Fact]
    public void TripPlanner_SameSeed_SameTripsBookingTheFirstNServices()
    {
        var first = new TripPlanner(7, 50);
        var second = new TripPlanner(7, 50);

        for (int i = 0; i < 20; i++)
        {
            var trip = first.Next(3);
            Assert.Equal(trip.Items, second.Next(3).Items);
            Assert.Equal(["hotel", "flight", "car"], trip.Bookings().Select(b => b.Service));
            Assert.All(trip.Bookings(), b => Assert.StartsWith(b.Service + "-", b.Item, StringComparison.Ordinal));
        }
    }
}
