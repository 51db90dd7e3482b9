using System.Text;
using System.Text.Json;
using Dse.Services;

namespace Dse.Samples.TravelReservation;

/// <summary>
/// A reservation service's state on its <see cref="SpeculativeKv"/>: a catalog of items, and per item its capacity and
/// the trips holding it. Every operation is a stored procedure of the store, so it runs alone and applies its writes
/// all together or not at all; reserve and cancel are idempotent by trip, and a reserve never takes an item past its
/// capacity.
/// </summary>
/// <remarks>
/// Layout: key <c>catalog</c> holds the item names (JSON array); key <c>item/NAME</c> holds the item's capacity and
/// holders (JSON). The catalog is written once, at the first start (<see cref="InitializeAsync"/>); later starts keep
/// what the store holds, whatever they are asked for.
/// </remarks>
public sealed class ReservationStore
{
    /// <summary>The longest trip id accepted, in characters.</summary>
    public const int MaxTripLength = 200;

    private const string StockProcedure = "stock";
    private const string ReserveProcedure = "reserve";
    private const string CancelProcedure = "cancel";
    private const string InspectProcedure = "inspect";
    private const string Reserved = "reserved";
    private const string Released = "released";
    private const string NotHeld = "not-held";

    private static readonly byte[] s_catalogKey = "catalog"u8.ToArray();

    private readonly TaskCompletionSource _ready = new(TaskCreationOptions.RunContinuationsAsynchronously);

    /// <summary>Serves the reservations of <paramref name="service"/> on <paramref name="kv"/>, registering the store's procedures on it.</summary>
    public ReservationStore(SpeculativeKv kv, string service)
    {
        ArgumentNullException.ThrowIfNull(kv);
        ArgumentException.ThrowIfNullOrEmpty(service);
        Kv = kv;
        Service = service;

        // Procedures are code, not state: registered on every start, before anything can call them.
        kv.RegisterProcedure(StockProcedure, Stock);
        kv.RegisterProcedure(ReserveProcedure, Reserve);
        kv.RegisterProcedure(CancelProcedure, Cancel);
        kv.RegisterProcedure(InspectProcedure, Inspect);
    }

    /// <summary>The store the reservations live in.</summary>
    public SpeculativeKv Kv { get; }

    /// <summary>The service's name (hotel, flight, ...), which prefixes its item names.</summary>
    public string Service { get; }

    /// <summary>Completes once <see cref="InitializeAsync"/> has run: the catalog exists.</summary>
    public Task Ready => _ready.Task;

    /// <summary>
    /// On the first start (no catalog yet), creates <paramref name="items"/> items (<c>SERVICE-0</c> ...) of
    /// <paramref name="capacity"/> each; later starts keep the stored catalog and capacities. Call it once the store is
    /// connected, outside any action (it runs its own); completes <see cref="Ready"/>.
    /// </summary>
    /// <exception cref="ArgumentOutOfRangeException"><paramref name="items"/> or <paramref name="capacity"/> is not positive.</exception>
    public async Task InitializeAsync(int items, int capacity, CancellationToken cancellationToken = default)
    {
        ArgumentOutOfRangeException.ThrowIfNegativeOrZero(items);
        ArgumentOutOfRangeException.ThrowIfNegativeOrZero(capacity);
        await Kv.StartLocalActionAsync(cancellationToken).ConfigureAwait(false);
        try
        {
            await Kv.RunProcedureAsync(StockProcedure, JsonSerializer.SerializeToUtf8Bytes(new StockInput(items, capacity)), cancellationToken).ConfigureAwait(false);
        }
        finally
        {
            Kv.EndAction();
        }

        _ready.TrySetResult();
    }

    /// <summary>Holds <paramref name="item"/> for <paramref name="trip"/> unless it is full. Call inside an action of <see cref="Kv"/>.</summary>
    /// <exception cref="ArgumentException">The item or trip is empty, the trip too long, or the item unknown.</exception>
    public async ValueTask<ReserveResult> ReserveAsync(string item, string trip, CancellationToken cancellationToken = default)
    {
        var output = await Kv.RunProcedureAsync(ReserveProcedure, Request(item, trip), cancellationToken).ConfigureAwait(false);
        string result = Encoding.UTF8.GetString(output.Span);
        return result == Reserved ? new ReserveResult(true, string.Empty) : new ReserveResult(false, result);
    }

    /// <summary>Releases <paramref name="trip"/>'s hold on <paramref name="item"/>; returns whether it held it. Call inside an action of <see cref="Kv"/>.</summary>
    /// <exception cref="ArgumentException">The item or trip is empty, the trip too long, or the item unknown.</exception>
    public async ValueTask<bool> CancelAsync(string item, string trip, CancellationToken cancellationToken = default)
    {
        var output = await Kv.RunProcedureAsync(CancelProcedure, Request(item, trip), cancellationToken).ConfigureAwait(false);
        return output.Span.SequenceEqual(Encoding.UTF8.GetBytes(Released));
    }

    /// <summary>Every item with its capacity and holders, as of one moment, in catalog order. Call inside an action of <see cref="Kv"/>.</summary>
    public async ValueTask<IReadOnlyList<ItemHolding>> InspectAsync(CancellationToken cancellationToken = default)
    {
        var output = await Kv.RunProcedureAsync(InspectProcedure, ReadOnlyMemory<byte>.Empty, cancellationToken).ConfigureAwait(false);
        return JsonSerializer.Deserialize<List<ItemHolding>>(output.Span) ?? [];
    }

    private static byte[] Request(string item, string trip)
    {
        ArgumentNullException.ThrowIfNull(item);
        ArgumentNullException.ThrowIfNull(trip);
        if (item.Length == 0)
        {
            throw new ArgumentException("The item must not be empty.", nameof(item));
        }

        if (trip.Length is 0 or > MaxTripLength)
        {
            throw new ArgumentException($"The trip must be 1 to {MaxTripLength} characters long (got {trip.Length}).", nameof(trip));
        }

        return JsonSerializer.SerializeToUtf8Bytes(new HoldRequest(item, trip));
    }

    private static byte[] ItemKey(string item) => Encoding.UTF8.GetBytes("item/" + item);

    private ReadOnlyMemory<byte> Stock(KvProcedureContext context, ReadOnlyMemory<byte> input)
    {
        if (context.Get(s_catalogKey) is not null)
        {
            return ReadOnlyMemory<byte>.Empty;
        }

        var stock = JsonSerializer.Deserialize<StockInput>(input.Span)!;
        var names = new string[stock.Items];
        for (int i = 0; i < names.Length; i++)
        {
            names[i] = TravelServices.ItemName(Service, i);
            context.Put(ItemKey(names[i]), JsonSerializer.SerializeToUtf8Bytes(new ItemRecord { Capacity = stock.Capacity }));
        }

        context.Put(s_catalogKey, JsonSerializer.SerializeToUtf8Bytes(names));
        return ReadOnlyMemory<byte>.Empty;
    }

    private ReadOnlyMemory<byte> Reserve(KvProcedureContext context, ReadOnlyMemory<byte> input)
    {
        var (request, record) = Load(context, input);
        if (record.Holders.Contains(request.Trip))
        {
            return Encoding.UTF8.GetBytes(Reserved);
        }

        if (record.Holders.Count >= record.Capacity)
        {
            return Encoding.UTF8.GetBytes(ReserveResult.Full);
        }

        record.Holders.Add(request.Trip);
        context.Put(ItemKey(request.Item), JsonSerializer.SerializeToUtf8Bytes(record));
        return Encoding.UTF8.GetBytes(Reserved);
    }

    private ReadOnlyMemory<byte> Cancel(KvProcedureContext context, ReadOnlyMemory<byte> input)
    {
        var (request, record) = Load(context, input);
        if (!record.Holders.Remove(request.Trip))
        {
            return Encoding.UTF8.GetBytes(NotHeld);
        }

        context.Put(ItemKey(request.Item), JsonSerializer.SerializeToUtf8Bytes(record));
        return Encoding.UTF8.GetBytes(Released);
    }

    private ReadOnlyMemory<byte> Inspect(KvProcedureContext context, ReadOnlyMemory<byte> input)
    {
        var names = context.Get(s_catalogKey) is { } catalog ? JsonSerializer.Deserialize<string[]>(catalog) ?? [] : [];
        var items = new List<ItemHolding>(names.Length);
        foreach (string name in names)
        {
            var record = JsonSerializer.Deserialize<ItemRecord>(context.Get(ItemKey(name)) ?? throw new InvalidDataException($"{Service}: the catalog names '{name}', which the store does not hold."))!;
            items.Add(new ItemHolding(name, record.Capacity, record.Holders));
        }

        return JsonSerializer.SerializeToUtf8Bytes(items);
    }

    /// <summary>The request and the item's record; an unknown item is bad input (the procedure throws, so nothing is written).</summary>
    private (HoldRequest Request, ItemRecord Record) Load(KvProcedureContext context, ReadOnlyMemory<byte> input)
    {
        var request = JsonSerializer.Deserialize<HoldRequest>(input.Span)!;
        var stored = context.Get(ItemKey(request.Item)) ?? throw new ArgumentException($"The {Service} service has no item '{request.Item}'.");
        return (request, JsonSerializer.Deserialize<ItemRecord>(stored)!);
    }

    private sealed record StockInput(int Items, int Capacity);

    private sealed record HoldRequest(string Item, string Trip);

    private sealed class ItemRecord
    {
        public int Capacity { get; set; }

        public List<string> Holders { get; set; } = [];
    }
}
