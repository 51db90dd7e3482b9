using Dse.Samples.TravelReservation;
using static Dse.Samples.Tests.TravelReservationStoreHarness;

namespace Dse.Samples.Tests;

/// <summary>The reservation store's stored procedures: idempotent by trip, capacity never exceeded, bad input refused, the stock kept across restarts.</summary>
public class TravelReservationStoreTests
{
    [Fact]
    public async Task InitializeAsync_FirstStart_CreatesTheItemsEmptyWithTheCapacity()
    {
        await using var harness = new TravelReservationStoreHarness();
        var store = await harness.OpenAsync(items: 3, capacity: 2);

        var items = await InspectAsync(store);

        Assert.Equal(["hotel-0", "hotel-1", "hotel-2"], items.Select(i => i.Item));
        Assert.All(items, i => Assert.Equal(2, i.Capacity));
        Assert.All(items, i => Assert.Empty(i.Holders));
        Assert.True(store.Ready.IsCompletedSuccessfully);
    }

    [Fact]
    public async Task ReserveAsync_SameTripTwice_ReservedBothTimesWithOneHold()
    {
        await using var harness = new TravelReservationStoreHarness();
        var store = await harness.OpenAsync();

        var first = await ReserveAsync(store, "hotel-1", "trip-a");
        var again = await ReserveAsync(store, "hotel-1", "trip-a");

        Assert.Equal(new ReserveResult(true, string.Empty), first);
        Assert.Equal(new ReserveResult(true, string.Empty), again);
        Assert.Equal(["trip-a"], (await InspectAsync(store))[1].Holders);
    }

    [Fact]
    public async Task ReserveAsync_ItemAtCapacity_RefusedFullWithoutAHoldButAHolderIsStillReserved()
    {
        await using var harness = new TravelReservationStoreHarness();
        var store = await harness.OpenAsync(capacity: 2);
        await ReserveAsync(store, "hotel-0", "trip-a");
        await ReserveAsync(store, "hotel-0", "trip-b");

        var refused = await ReserveAsync(store, "hotel-0", "trip-c");
        var holder = await ReserveAsync(store, "hotel-0", "trip-a");

        Assert.Equal(new ReserveResult(false, ReserveResult.Full), refused);
        Assert.True(holder.Reserved);
        Assert.Equal(["trip-a", "trip-b"], (await InspectAsync(store))[0].Holders);
    }

    [Fact]
    public async Task CancelAsync_HolderTwiceAndANonHolder_ReleasesOnceAndChangesNothingElse()
    {
        await using var harness = new TravelReservationStoreHarness();
        var store = await harness.OpenAsync();
        await ReserveAsync(store, "hotel-2", "trip-a");
        await ReserveAsync(store, "hotel-2", "trip-b");

        bool released = await CancelAsync(store, "hotel-2", "trip-a");
        bool again = await CancelAsync(store, "hotel-2", "trip-a");
        bool never = await CancelAsync(store, "hotel-2", "trip-z");

        Assert.True(released);
        Assert.False(again);
        Assert.False(never);
        Assert.Equal(["trip-b"], (await InspectAsync(store))[2].Holders);
    }

    [Fact]
    public async Task CancelAsync_OnAFullItem_FreesRoomForAnotherTrip()
    {
        await using var harness = new TravelReservationStoreHarness();
        var store = await harness.OpenAsync(capacity: 1);
        await ReserveAsync(store, "hotel-0", "trip-a");
        Assert.False((await ReserveAsync(store, "hotel-0", "trip-b")).Reserved);

        await CancelAsync(store, "hotel-0", "trip-a");

        Assert.True((await ReserveAsync(store, "hotel-0", "trip-b")).Reserved);
        Assert.Equal(["trip-b"], (await InspectAsync(store))[0].Holders);
    }

    [Theory]
    [InlineData("hotel-9", "trip-a", "no item 'hotel-9'")]
    [InlineData("flight-0", "trip-a", "no item 'flight-0'")]
    [InlineData("", "trip-a", "item")]
    [InlineData("hotel-0", "", "trip")]
    public async Task ReserveAndCancel_BadInput_ThrowArgumentExceptionAndChangeNothing(string item, string trip, string named)
    {
        await using var harness = new TravelReservationStoreHarness();
        var store = await harness.OpenAsync();

        var reserve = await Assert.ThrowsAnyAsync<ArgumentException>(() => ReserveAsync(store, item, trip));
        var cancel = await Assert.ThrowsAnyAsync<ArgumentException>(() => CancelAsync(store, item, trip));

        Assert.Contains(named, reserve.Message, StringComparison.Ordinal);
        Assert.Contains(named, cancel.Message, StringComparison.Ordinal);
        Assert.All(await InspectAsync(store), i => Assert.Empty(i.Holders));
    }

    [Fact]
    public async Task ReserveAsync_TripLongerThanTheLimit_ThrowsArgumentException()
    {
        await using var harness = new TravelReservationStoreHarness();
        var store = await harness.OpenAsync();

        await Assert.ThrowsAnyAsync<ArgumentException>(() => ReserveAsync(store, "hotel-0", new string('t', ReservationStore.MaxTripLength + 1)));
    }

    [Fact]
    [Trait("Category", "Recovery")]
    public async Task InitializeAsync_RestartAskingForOtherStock_KeepsTheStoredCapacityAndHolders()
    {
        await using var harness = new TravelReservationStoreHarness();
        var store = await harness.OpenAsync(items: 3, capacity: 2);
        await ReserveAsync(store, "hotel-1", "trip-a");
        await SettleAsync(store);
        await harness.CrashAsync(store);

        var restarted = await harness.OpenAsync(items: 5, capacity: 9);
        var items = await InspectAsync(restarted);

        Assert.Equal(3, items.Count);
        Assert.All(items, i => Assert.Equal(2, i.Capacity));
        Assert.Equal(["trip-a"], items[1].Holders);
    }

    [Fact]
    [Trait("Category", "Recovery")]
    public async Task ReserveAsync_CrashBeforePersist_HoldIsGoneAfterRestart()
    {
        await using var harness = new TravelReservationStoreHarness();
        var store = await harness.OpenAsync();
        await SettleAsync(store);
        await ReserveAsync(store, "hotel-0", "trip-a");
        await harness.CrashAsync(store);

        var restarted = await harness.OpenAsync();

        Assert.Empty((await InspectAsync(restarted))[0].Holders);
    }
}
