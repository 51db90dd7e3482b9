using Dse.Storage;
using DseService;

// An ASP.NET Core gRPC service made speculative with AddDse. Its state persists as snapshots in a log on a local file
// that this program owns: opened before the host and, declared first, disposed after it.
var builder = ServiceHost.CreateBuilder(args);
string dataDirectory = builder.Configuration["Service:DataDirectory"] ?? "data";
long objectId = builder.Configuration.GetValue<long>("Dse:ObjectId");
Directory.CreateDirectory(dataDirectory);

await using var log = await SnapshotLog.OpenAsync(
    DseDevices.CreateLocalFile(Path.Combine(dataDirectory, $"counters-{objectId}.log")), new SnapshotLogOptions { OwnsDevice = true });
await using var app = ServiceHost.Build(builder, log);
await app.RunAsync();
