using System.Diagnostics;
using System.Diagnostics.Metrics;
using System.Globalization;
using Dse;
using Dse.Hosting;
using Dse.Samples.HelloDse;
using Dse.Samples.HelloDse.Wire;
using Dse.Storage;
using Grpc.Net.Client;
using Microsoft.Extensions.DependencyInjection;

// A first DSE service: Greeter answers a plain gRPC client and asks Visits how often each name came by. Both are
// ASP.NET gRPC services made speculative with AddDse; each persists its state as snapshots on local files.
var names = new List<string>();
string? dataDirectory = null;
Uri? coordinatorAddress = null;
bool speculative = true;
bool serve = false;
for (int i = 0; i < args.Length; i++)
{
    switch (args[i])
    {
        case "--data-dir" when i + 1 < args.Length:
            dataDirectory = args[++i];
            break;
        case "--coordinator" when i + 1 < args.Length && Uri.TryCreate(args[i + 1], UriKind.Absolute, out var address):
            coordinatorAddress = address;
            i++;
            break;
        case "--no-speculation":
            speculative = false;
            break;
        case "--serve":
            serve = true;
            break;
        case string name when !name.StartsWith('-'):
            names.Add(name);
            break;
        default:
            Console.Error.WriteLine($"Unknown or incomplete option '{args[i]}'.");
            Console.Error.WriteLine("Usage: dotnet run --project samples/HelloDse -- [NAME ...] [--data-dir PATH] [--coordinator URL] [--no-speculation] [--serve]");
            return 2;
    }
}

if (names.Count == 0)
{
    names.AddRange(["Ada", "Grace", "Ada"]);
}

// The state outlives the process: run the sample again and the counts go on. Delete the folder to start over.
dataDirectory ??= Path.Combine(Path.GetTempPath(), "hello-dse");
Directory.CreateDirectory(dataDirectory);

// The runtime's meter, "Dse": dse.versions.persisted counts the versions the group commit hands to storage.
long versionsPersisted = 0;
using var meters = new MeterListener();
meters.InstrumentPublished = (instrument, listener) =>
{
    if (instrument.Meter.Name == DseTelemetry.Name && instrument.Name == "dse.versions.persisted")
    {
        listener.EnableMeasurementEvents(instrument);
    }
};
meters.SetMeasurementEventCallback<long>((_, value, _, _) => Interlocked.Add(ref versionsPersisted, value));
meters.Start();

// Storage. Each StateObject persists to its own SnapshotLog; each log owns its device (OwnsDevice) and this program owns
// the logs: they are opened before the hosts and, declared first, disposed after them.
await using var visitsLog = await SnapshotLog.OpenAsync(
    DseDevices.CreateLocalFile(Path.Combine(dataDirectory, "visits.log")), new SnapshotLogOptions { OwnsDevice = true });
await using var greeterLog = await SnapshotLog.OpenAsync(
    DseDevices.CreateLocalFile(Path.Combine(dataDirectory, "greeter.log")), new SnapshotLogOptions { OwnsDevice = true });

// The coordinator. Embedded: one ClusterCoordinator in this process, shared by both hosts (AddDse's own in-process
// default would give each host a coordinator of its own). Remote: each host connects to the coordinator host over gRPC.
// It expects both StateObjects, so that a restart after a crash restores a consistent pair (docs/hosting.md).
await using var embedded = coordinatorAddress is null
    ? new ClusterCoordinator(new ClusterCoordinatorOptions { ExpectedParticipants = [HelloDseIds.Greeter, HelloDseIds.Visits] })
    : null;
void UseCoordinator(IDseBuilder dse)
{
    if (embedded is not null)
    {
        dse.UseCoordinator(embedded);
    }
    else
    {
        dse.UseRemoteCoordinator(coordinatorAddress!);
    }
}

await using var visitsHost = ServiceHost.Visits(visitsLog, speculative, UseCoordinator);
await visitsHost.StartAsync();
await using var greeterHost = ServiceHost.Greeter(greeterLog, ServiceHost.AddressOf(visitsHost), speculative, UseCoordinator);
await greeterHost.StartAsync();

// The hosts connect their StateObjects in the background; calls before that fail with UNAVAILABLE.
await visitsHost.Services.GetRequiredService<IDseReadiness>().WhenReadyAsync();
await greeterHost.Services.GetRequiredService<IDseReadiness>().WhenReadyAsync();
Console.WriteLine($"HelloDse: {(speculative ? "speculative" : "non-speculative")}, coordinator {coordinatorAddress?.ToString() ?? "embedded"}, data in {dataDirectory}");

// A client without DSE (a browser, a script): each reply leaves the Greeter only once everything it depends on,
// Visits' count included, is recoverable.
using (var channel = GrpcChannel.ForAddress(ServiceHost.AddressOf(greeterHost)))
{
    var greeter = new Greeter.GreeterClient(channel);
    foreach (string name in names)
    {
        long start = Stopwatch.GetTimestamp();
        var reply = await greeter.GreetAsync(new GreetRequest { Name = name });
        Console.WriteLine(string.Create(CultureInfo.InvariantCulture, $"{reply.Message} ({Stopwatch.GetElapsedTime(start).TotalMilliseconds:F1} ms)"));
    }
}

if (serve)
{
    // Both hosts keep serving, their metrics too, until Ctrl+C (or SIGTERM) stops them.
    string greeterAddress = ServiceHost.AddressOf(greeterHost).ToString().TrimEnd('/');
    string visitsAddress = ServiceHost.AddressOf(visitsHost).ToString().TrimEnd('/');
    Console.WriteLine($"Serving until Ctrl+C: Greeter at {greeterAddress}, Visits at {visitsAddress}; metrics: curl --http2-prior-knowledge {greeterAddress}/metrics");
    var stopping = new TaskCompletionSource();
    using (greeterHost.Lifetime.ApplicationStopping.Register(() => stopping.TrySetResult()))
    {
        await stopping.Task;
    }
}

// A graceful stop persists each StateObject's current version and waits for it to commit.
await greeterHost.StopAsync();
await visitsHost.StopAsync();
Console.WriteLine($"Versions persisted (meter {DseTelemetry.Name}, dse.versions.persisted): {Interlocked.Read(ref versionsPersisted)}");

return 0;
