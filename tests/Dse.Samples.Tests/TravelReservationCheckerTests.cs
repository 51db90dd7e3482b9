using Dse.Samples.TravelReservation;

namespace Dse.Samples.Tests;

/// <summary>The travel checker on hand-made stores and trips: one clean case, then one broken rule at a time.</summary>
public class TravelReservationCheckerTests
{
    private static readonly TripBooking s_hotel1 = new("hotel", "hotel-1");
    private static readonly TripBooking s_flight2 = new("flight", "flight-2");

    [Fact]
    public void Check_ConsistentRun_NoViolations()
    {
        var services = Stores(hotel1: ["trip-ok"], flight2: ["trip-ok"]);
        TripRecord[] trips =
        [
            Trip("trip-ok", TripRecord.Confirmed),
            Trip("trip-failed", "failed: flight full"),
            Trip("trip-one", TripRecord.Confirmed, bookings: []),
        ];

        Assert.Empty(TravelChecker.Check(services, trips));
    }

    [Fact]
    public void Check_MoreHoldersThanCapacity_CapacityViolation()
    {
        var services = new[] { new ServiceHoldings("hotel", [new ItemHolding("hotel-1", 1, ["trip-a", "trip-b"])]) };
        TripRecord[] trips = [Trip("trip-a", TripRecord.Confirmed, [s_hotel1]), Trip("trip-b", TripRecord.Confirmed, [s_hotel1])];

        Assert.Equal(["capacity: hotel/hotel-1 has 2 holders, over its capacity 1"], TravelChecker.Check(services, trips));
    }

    [Fact]
    public void Check_TripHoldingAnItemTwice_DoubleHold()
    {
        var services = new[] { new ServiceHoldings("hotel", [new ItemHolding("hotel-1", 5, ["trip-a", "trip-a"])]) };

        Assert.Equal(["double hold: trip-a holds hotel/hotel-1 twice"], TravelChecker.Check(services, [Trip("trip-a", TripRecord.Confirmed, [s_hotel1])]));
    }

    [Fact]
    public void Check_ConfirmedTripMissingAHold_ConfirmedNotHeld()
    {
        var violations = TravelChecker.Check(Stores(hotel1: ["trip-a"], flight2: []), [Trip("trip-a", TripRecord.Confirmed)]);

        Assert.Equal(["confirmed, not held: trip-a is confirmed but does not hold flight/flight-2"], violations);
    }

    [Fact]
    public void Check_ConfirmedTripHoldingWhatItDidNotBook_StrayHold()
    {
        var violations = TravelChecker.Check(Stores(hotel1: ["trip-a"], flight2: ["trip-a"]), [Trip("trip-a", TripRecord.Confirmed, [s_hotel1])]);

        Assert.Equal(["stray hold: trip-a holds flight/flight-2, which it did not book"], violations);
    }

    [Fact]
    public void Check_FailedTripStillHolding_FailedStillHeld()
    {
        var violations = TravelChecker.Check(Stores(hotel1: ["trip-a"], flight2: []), [Trip("trip-a", "failed: flight full")]);

        Assert.Equal(["failed, still held: trip-a ended 'failed: flight full' but holds hotel/hotel-1"], violations);
    }

    [Fact]
    public void Check_HolderTheFrontendDoesNotKnow_OrphanAndNoOutcome()
    {
        var violations = TravelChecker.Check(Stores(hotel1: ["trip-x"], flight2: []), [Trip("trip-x", told: null, known: false, outcomes: [])]);

        Assert.Equal(
        [
            "orphan: hotel/hotel-1 is held by trip-x, a trip the frontend does not know",
            "no outcome: trip-x was never answered, and the frontend does not know it",
        ], violations);
    }

    [Fact]
    public void Check_HolderNoTripRecordNames_Orphan()
    {
        var violations = TravelChecker.Check(Stores(hotel1: ["trip-ghost"], flight2: []), []);

        Assert.Equal(["orphan: hotel/hotel-1 is held by trip-ghost, a trip the frontend does not know"], violations);
    }

    [Fact]
    public void Check_ToldOutcomeTheFrontendNoLongerKnows_LostOutcome()
    {
        var violations = TravelChecker.Check(Stores(hotel1: [], flight2: []), [Trip("trip-a", told: "failed: hotel full", known: false, outcomes: [])]);

        Assert.Equal(["lost outcome: trip-a's client was told 'failed: hotel full', but the frontend does not know the trip"], violations);
    }

    [Fact]
    public void Check_ToldOutcomeDiffersFromTheFrontends_LostOutcome()
    {
        var violations = TravelChecker.Check(Stores(hotel1: [], flight2: []), [Trip("trip-a", told: TripRecord.Confirmed, known: true, outcomes: ["failed: hotel full"])]);

        Assert.Equal(["lost outcome: trip-a's client was told 'confirmed', but the frontend records 'failed: hotel full'"], violations);
    }

    [Fact]
    public void Check_TripWithNoneOrTwoOutcomes_OneViolationEach()
    {
        TripRecord[] trips =
        [
            Trip("trip-running", told: null, known: true, outcomes: []),
            Trip("trip-twice", told: null, known: true, outcomes: [TripRecord.Confirmed, "failed: car full"]),
        ];

        Assert.Equal(
        [
            "no outcome: trip-running has none at the frontend",
            "several outcomes: trip-twice has 2 at the frontend (confirmed; failed: car full)",
        ], TravelChecker.Check(Stores(hotel1: [], flight2: []), trips));
    }

    [Fact]
    public void Check_OutcomeNeitherConfirmedNorFailed_UnknownOutcome()
    {
        var violations = TravelChecker.Check(Stores(hotel1: [], flight2: []), [Trip("trip-a", "error: Internal: boom")]);

        Assert.Equal(["unknown outcome: trip-a ended 'error: Internal: boom'"], violations);
    }

    [Fact]
    public void Check_TwoRecordsForOneTrip_ArgumentException()
    {
        Assert.Throws<ArgumentException>(() => TravelChecker.Check([], [Trip("trip-a", TripRecord.Confirmed), Trip("trip-a", TripRecord.Confirmed)]));
    }

    [Fact]
    public void Write_Violations_CountThenOneLineEach()
    {
        using var writer = new StringWriter();

        TravelChecker.Write(writer, ["capacity: x", "orphan: y"]);

        Assert.Equal($"violations 2{Environment.NewLine}  capacity: x{Environment.NewLine}  orphan: y{Environment.NewLine}", writer.ToString());
    }

    /// <summary>A hotel and a flight service of one item each (capacity 2) with the holders given.</summary>
    private static ServiceHoldings[] Stores(string[] hotel1, string[] flight2) =>
    [
        new("hotel", [new ItemHolding("hotel-1", 2, hotel1)]),
        new("flight", [new ItemHolding("flight-2", 2, flight2)]),
    ];

    /// <summary>A trip the frontend knows with one outcome, which its client was told; by default it booked hotel-1 and flight-2.</summary>
    private static TripRecord Trip(string id, string outcome, TripBooking[]? bookings = null) =>
        new(id, bookings ?? [s_hotel1, s_flight2], outcome, true, [outcome]);

    private static TripRecord Trip(string id, string? told, bool known, string[] outcomes) =>
        new(id, [s_hotel1, s_flight2], told, known, outcomes);
}
