using System.Diagnostics;
using System.Globalization;
using System.Net;
using System.Text;
using Dse.Storage;
using Dse.Testing.Wire;
using Grpc.Net.Client;
using Microsoft.AspNetCore.Builder;
using Microsoft.AspNetCore.Hosting;
using Microsoft.AspNetCore.Hosting.Server;
using Microsoft.AspNetCore.Hosting.Server.Features;
using Microsoft.AspNetCore.Http.Features;
using Microsoft.AspNetCore.Server.Kestrel.Core;
using Microsoft.Extensions.DependencyInjection;
using Microsoft.Extensions.Logging;

namespace Dse.Hosting.TestHost;

/// <summary>
/// The hosting crash tests' child: one ASP.NET host with two gRPC services, Front and Back, each on its own StateObject
/// registered with <c>AddDse</c>, and the default (in-process) coordinator. Front's handler calls Back, so each
/// service's state depends on the other's. Plain gRPC clients (without DSE) call Front, so every reply waits at a
/// barrier. The program kills itself with SIGKILL mid-traffic; the next run restarts on the same storage.
/// </summary>
/// <remarks>
/// <para>Arguments: <c>--dir DIR</c>, optionally <c>--kill-after N</c> (default 0), <c>--clients N</c> (concurrent
/// callers, default 4), <c>--barrier-timeout-ms N</c> (<c>Dse:BarrierTimeout</c>, default 5000),
/// <c>--back-write-latency-ms N</c> (Back's storage holds each write back that long, default 0: a kill then loses
/// Back's newest versions while Front keeps its own, which depend on them).</para>
/// <para>Standard output, one line each: <c>RECOVERED front back world-line</c> once both StateObjects connected (the
/// totals they restored); <c>ACK total</c> for each reply (Front's total after that addition, which passed its
/// barrier, so it must survive any crash); then, with <c>--kill-after N</c>, <c>KILL</c> once N replies arrived, and
/// the process kills itself with SIGKILL while the other calls are in flight. Without it, one call is made, the host
/// stops gracefully, <c>STOPPED front back</c> is printed and the exit code is 0.</para>
/// <para>Errors (a call that fails, a connect that does not finish within 20 s) go to standard error with exit code 3;
/// bad arguments exit 2. The runtime's log goes to standard error too.</para>
/// </remarks>
internal static class Program
{
    private const int ExitUsage = 2;
    private const int ExitFailed = 3;
    private const string Usage = "usage: Dse.Hosting.TestHost --dir DIR [--kill-after N] [--clients N] [--barrier-timeout-ms N] [--back-write-latency-ms N]";
    private static readonly TimeSpan ConnectTimeout = TimeSpan.FromSeconds(20);
    private static readonly TimeSpan CallTimeout = TimeSpan.FromSeconds(20);

    public static async Task<int> Main(string[] args)
    {
        var errors = Console.Error;
        if (!TryParse(args, out string directory, out long killAfter, out int clients, out var barrierTimeout, out var backWriteLatency))
        {
            await errors.WriteLineAsync(Usage);
            return ExitUsage;
        }

        await using var output = TextWriter.Synchronized(new StreamWriter(Console.OpenStandardOutput(), new UTF8Encoding(encoderShouldEmitUTF8Identifier: false)) { AutoFlush = true });
        Directory.CreateDirectory(directory);

        await using var frontLog = await OpenLogAsync(Path.Combine(directory, "front.log"));
        await using var backLog = await OpenLogAsync(Path.Combine(directory, "back.log"), backWriteLatency);
        await using var app = Build(frontLog, backLog, barrierTimeout);
        try
        {
            await app.StartAsync();
            using (var connect = new CancellationTokenSource(ConnectTimeout))
            {
                await app.Services.GetRequiredService<IDseReadiness>().WhenReadyAsync(connect.Token);
            }

            var front = app.Services.GetRequiredService<FrontTotal>();
            var back = app.Services.GetRequiredService<BackTotal>();
            await output.WriteLineAsync(string.Create(CultureInfo.InvariantCulture, $"RECOVERED {front.Total} {back.Total} {front.WorldLine}"));

            using var channel = GrpcChannel.ForAddress(AddressOf(app));
            var client = new Front.FrontClient(channel);
            if (killAfter == 0)
            {
                await AddAsync(client, output);
                await app.StopAsync();
                await output.WriteLineAsync(string.Create(CultureInfo.InvariantCulture, $"STOPPED {front.Total} {back.Total}"));
                return 0;
            }

            long replies = 0;
            var callers = new Task[clients];
            for (int i = 0; i < callers.Length; i++)
            {
                callers[i] = Task.Run(async () =>
                {
                    while (true)
                    {
                        await AddAsync(client, output);
                        if (Interlocked.Increment(ref replies) == killAfter)
                        {
                            await output.WriteLineAsync("KILL");
                            using var self = Process.GetCurrentProcess();
                            self.Kill();
                        }
                    }
                });
            }

            await Task.WhenAll(callers);
            return 0;
        }
        catch (Exception ex)
        {
            await errors.WriteLineAsync($"FAIL {ex}");
            if (ex is global::Grpc.Core.RpcException { Status.DebugException: { } debug })
            {
                await errors.WriteLineAsync($"DEBUG {debug}");
            }
            return ExitFailed;
        }
    }

    /// <summary>One plain call to Front (no DSE header: the reply waits at its barrier); prints its ACK.</summary>
    private static async Task AddAsync(Front.FrontClient client, TextWriter output)
    {
        var reply = await client.AddAsync(new AddRequest { Amount = 1 }, deadline: DateTime.UtcNow + CallTimeout);
        await output.WriteLineAsync(string.Create(CultureInfo.InvariantCulture, $"ACK {reply.Total}"));
    }

    /// <summary>
    /// A snapshot log on a local file, with buffered writes: a kill -9 loses the process, not the page cache, which is
    /// the crash this program models. A write latency holds each write back that long before it reaches the file, so a
    /// kill loses the writes still held: the StateObject on it loses its newest versions, the other one keeps its own.
    /// </summary>
    private static async Task<SnapshotLog> OpenLogAsync(string path, TimeSpan writeLatency = default)
    {
        var device = DseDevices.CreateLocalFile(path, new LocalFileDeviceOptions { DisableFileBuffering = false });
        return await SnapshotLog.OpenAsync(
            writeLatency > TimeSpan.Zero ? device.WithLatency(writeLatency) : device,
            new SnapshotLogOptions { OwnsDevice = true });
    }

    private static WebApplication Build(SnapshotLog frontLog, SnapshotLog backLog, TimeSpan barrierTimeout)
    {
        var builder = WebApplication.CreateSlimBuilder(new WebApplicationOptions { Args = [], ContentRootPath = AppContext.BaseDirectory });
        builder.WebHost.ConfigureKestrel(kestrel => kestrel.Listen(IPAddress.Loopback, 0, listen => listen.Protocols = HttpProtocols.Http2));
        builder.Logging.ClearProviders()
            .AddConsole(console => console.LogToStandardErrorThreshold = LogLevel.Trace)
            .AddSimpleConsole(console =>
            {
                console.SingleLine = true;
                console.TimestampFormat = "HH:mm:ss.fff ";
            })
            .SetMinimumLevel(LogLevel.Warning)
            .AddFilter("Dse", LogLevel.Information);

        // The in-process coordinator is the default; it expects both StateObjects at start (their ids, by default).
        builder.Services
            .AddDse(options =>
            {
                options.GroupCommitPeriod = TimeSpan.FromMilliseconds(5);
                options.ShutdownTimeout = TimeSpan.FromSeconds(5);
                options.BarrierTimeout = barrierTimeout;
            })
            .AddStateObject((_, options) => new FrontTotal(options, frontLog), Ids.Front)
            .AddStateObject((_, options) => new BackTotal(options, backLog), Ids.Back)
            .AddGrpcInterceptors<FrontService, FrontTotal>()
            .AddGrpcInterceptors<BackService, BackTotal>();

        // Front calls Back in this same host, through the DSE client interceptor: the call carries Front's state.
        builder.Services.AddGrpcClient<Back.BackClient>((services, client) => client.Address = AddressOf(services))
            .AddDseInterceptor();

        var app = builder.Build();
        app.MapGrpcService<FrontService>();
        app.MapGrpcService<BackService>();
        return app;
    }

    private static Uri AddressOf(WebApplication app) => AddressOf(app.Services);

    private static Uri AddressOf(IServiceProvider services) =>
        new(services.GetRequiredService<IServer>().Features.GetRequiredFeature<IServerAddressesFeature>().Addresses.First());

    private static bool TryParse(string[] args, out string directory, out long killAfter, out int clients, out TimeSpan barrierTimeout, out TimeSpan backWriteLatency)
    {
        directory = string.Empty;
        killAfter = 0;
        clients = 4;
        barrierTimeout = TimeSpan.FromSeconds(5);
        backWriteLatency = TimeSpan.Zero;
        for (int i = 0; i + 1 < args.Length; i += 2)
        {
            string value = args[i + 1];
            switch (args[i])
            {
                case "--dir":
                    directory = value;
                    break;
                case "--kill-after" when long.TryParse(value, CultureInfo.InvariantCulture, out killAfter) && killAfter >= 0:
                    break;
                case "--clients" when int.TryParse(value, CultureInfo.InvariantCulture, out clients) && clients > 0:
                    break;
                case "--barrier-timeout-ms" when int.TryParse(value, CultureInfo.InvariantCulture, out int ms) && ms > 0:
                    barrierTimeout = TimeSpan.FromMilliseconds(ms);
                    break;
                case "--back-write-latency-ms" when int.TryParse(value, CultureInfo.InvariantCulture, out int ms) && ms >= 0:
                    backWriteLatency = TimeSpan.FromMilliseconds(ms);
                    break;
                default:
                    return false;
            }
        }

        return args.Length % 2 == 0 && directory.Length > 0;
    }
}
