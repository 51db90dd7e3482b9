using Dse.Grpc;
using Dse.Samples.Shared;
using Dse.Samples.TravelReservation.Wire;
using Dse.Services;
using Dse.Workflows;
using Microsoft.AspNetCore.Builder;
using Microsoft.Extensions.DependencyInjection;

namespace Dse.Samples.TravelReservation;

/// <summary>
/// The travel frontend process (mode <see cref="Mode"/>): an ASP.NET gRPC server on 127.0.0.1 that hosts the workflow
/// engine (<c>dse.workflows.v1.WorkflowService</c>) on its own <see cref="SpeculativeLog"/>, with the
/// <see cref="TripWorkflow"/> registered and one client per reservation service.
/// </summary>
/// <remarks>
/// Arguments: <c>--id --port --data DIR --coordinator URL --group-commit-ms --speculative true|false --services
/// URL,URL,...</c> (the reservation services in booking order). The log lives in <c>DIR</c>; after a restart the engine
/// rebuilds every workflow from it and re-issues the steps that had no result.
/// </remarks>
internal static class FrontendHost
{
    /// <summary>The process mode.</summary>
    public const string Mode = "frontend";

    /// <summary>Builds and starts the frontend; returns once the engine serves (its history loaded), with the address it serves on.</summary>
    /// <exception cref="ArgumentException">An argument is missing or invalid.</exception>
    public static async Task<(WebApplication App, Uri Address)> StartAsync(ChildArguments args, CancellationToken cancellationToken)
    {
        ArgumentNullException.ThrowIfNull(args);
        string data = args.Get("data");
        var addresses = args.Get("services").Split(',').Select(a => new Uri(a)).ToArray();
        var server = SampleServer.Create(args);
        server.AddGrpc();

        // The workflow service runs DSE by hand, so no server interceptor here; the clients carry each step's header.
        var services = new DseClients<Reservation.ReservationClient>(addresses, server.Tls?.LoadAuthority(), new DseClientInterceptor(), invoker => new Reservation.ReservationClient(invoker));
        server.Builder.Services.AddSingleton(services);
        var trip = new TripWorkflow(services.Clients);
        server.AddDse()
            .AddStateObject((_, options) => SampleServer.CreateLog(options, data))
            .AddDseWorkflows(registry => registry.Register<TripInput, string>(TripWorkflow.Type, trip.RunAsync));

        var app = server.Build();
        app.MapDseWorkflows();
        await app.StartAsync(cancellationToken);
        await app.Services.GetRequiredService<WorkflowEngine>().WhenReadyAsync(cancellationToken);
        return (app, server.Address);
    }
}
