using Dse.Hosting;
using Dse.Samples.Shared;
using Dse.Services;
using Microsoft.AspNetCore.Builder;
using Microsoft.Extensions.DependencyInjection;

namespace Dse.Samples.TravelReservation;

/// <summary>
/// A reservation service process (mode <see cref="Mode"/>): an ASP.NET gRPC server on 127.0.0.1 whose
/// <see cref="ReservationService"/> is made speculative by the DSE interceptor on behalf of its own
/// <see cref="SpeculativeKv"/>, connected to the DSE coordinator process.
/// </summary>
/// <remarks>
/// Arguments: <c>--id --name hotel|flight|car|train|insurance --port --data DIR --coordinator URL --group-commit-ms
/// --speculative true|false --items K --capacity C</c>; the store lives in <c>DIR/kv</c>, and K items of capacity C are
/// created on its first start only.
/// </remarks>
internal static class ReservationHost
{
    /// <summary>The process mode.</summary>
    public const string Mode = "reservation";

    /// <summary>Builds and starts the service; returns once its store is connected and stocked, with the address it serves on.</summary>
    /// <exception cref="ArgumentException">An argument is missing or invalid.</exception>
    public static async Task<(WebApplication App, Uri Address)> StartAsync(ChildArguments args, CancellationToken cancellationToken)
    {
        ArgumentNullException.ThrowIfNull(args);
        string name = args.Get("name");
        if (!TravelServices.Names.Contains(name))
        {
            throw new ArgumentException($"--name must be one of {string.Join(", ", TravelServices.Names)} (got '{name}').");
        }

        int items = (int)args.GetInt64("items");
        int capacity = (int)args.GetInt64("capacity");
        string data = args.Get("data");
        var server = SampleServer.Create(args);
        server.AddGrpc();
        server.AddDse()
            .AddStateObject((_, options) => new SpeculativeKv(options, new SpeculativeKvOptions
            {
                Directory = Path.Combine(data, "kv"),

                // A few hundred small records: a small index keeps each version's checkpoint cheap. Every reservation
                // rewrites its item's record (its holders) at the log's tail, so at hundreds of trips per second the
                // log grows by megabytes a minute: 64 MB of memory keeps every item in memory for a whole run, where a
                // smaller one would push rarely booked items to disk and every read of them would wait for I/O. An
                // item's record stays far below the largest value at the launcher's largest capacity.
                IndexBuckets = 1 << 12,
                PageSizeBits = 18,
                MemorySizeBits = 26,
                SegmentSizeBits = 24,
                MaxKeyBytes = 256,
                MaxValueBytes = 128 * 1024,
            }))
            .AddGrpcInterceptors<SpeculativeKv>();
        server.Builder.Services.AddSingleton(sp => new ReservationStore(sp.GetRequiredService<SpeculativeKv>(), name));

        var app = server.Build();
        app.MapGrpcService<ReservationService>();

        // The store registers its procedures when built, before the host starts serving.
        var store = app.Services.GetRequiredService<ReservationStore>();
        await app.StartAsync(cancellationToken);
        await app.Services.GetRequiredService<IDseReadiness>().WhenReadyAsync(cancellationToken);
        await store.InitializeAsync(items, capacity, cancellationToken);
        return (app, server.Address);
    }
}
