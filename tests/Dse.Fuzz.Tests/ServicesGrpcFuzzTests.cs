using Dse.Grpc;
using Dse.Services;
using Dse.Services.Grpc;
using Dse.Services.Grpc.V1;
using Dse.Storage;
using Dse.Testing;
using Google.Protobuf;
using Grpc.Core;
using Microsoft.AspNetCore.Builder;
using Microsoft.Extensions.DependencyInjection;
using Xunit.Abstractions;

namespace Dse.Fuzz.Tests;

/// <summary>
/// Every request of the speculative key-value store (with the DSE server interceptor, and in manual mode) and of the
/// speculative log (protos/dse/services/v1), as raw, random and mutated bytes, with a valid, a missing or a damaged
/// <c>dse-header-bin</c> entry, against loopback servers: each call answers within its deadline with a documented status
/// (never UNKNOWN or INTERNAL), a refused call changes no key it names and adds no log entry, and each service still
/// serves a speculative caller's valid request.
/// </summary>
[Trait("Category", "Fuzz")]
public sealed class ServicesGrpcFuzzTests(ITestOutputHelper output) : IAsyncLifetime
{
    private const string KvService = "dse.services.v1.KeyValueService";
    private const string LogService = "dse.services.v1.LogService";
    private static readonly string[] KvMethods = ["Get", "Put", "Delete", "CompareAndSwap", "Execute"];
    private static readonly string[] LogMethods = ["Append", "Read", "Scan"];
    private static readonly string[] Keys = ["a", "b", "seats"];

    private readonly string _root = Path.Combine(Path.GetTempPath(), "dse-fuzz-services-" + Guid.NewGuid().ToString("N"));
    private readonly ClusterCoordinator _coordinator = new();
    private readonly List<IAsyncDisposable> _owned = [];

    public Task InitializeAsync() => Task.CompletedTask;

    public async Task DisposeAsync()
    {
        for (int i = _owned.Count - 1; i >= 0; i--)
        {
            await _owned[i].DisposeAsync();
        }

        await _coordinator.DisposeAsync();
        try
        {
            Directory.Delete(_root, recursive: true);
        }
        catch (IOException)
        {
            // A device still closing; the OS cleans temp.
        }
    }

    [Fact]
    public async Task EveryMethod_MutatedRequestsAndHeaders_DocumentedStatusAndNoChangeWhenRefused()
    {
        var caller = await Own(new CallerObject(Options(1), await SnapshotLog.OpenAsync(DseDevices.CreateInMemory(), new SnapshotLogOptions { OwnsDevice = true })));
        await caller.ConnectAsync(_coordinator);
        var kv = await Own(new SpeculativeKv(Options(2), new SpeculativeKvOptions
        {
            Directory = Path.Combine(_root, "kv"),
            IndexBuckets = 1 << 10,
            PageSizeBits = 16,
            MemorySizeBits = 20,
            SegmentSizeBits = 22,
            MaxKeyBytes = 64,
            MaxValueBytes = 4096,
        }));
        kv.RegisterProcedure("reserve", (context, input) =>
        {
            var left = context.Get(input.Span) ?? [0];
            if (left[0] == 0)
            {
                return new byte[] { 0 };
            }

            context.Put(input.Span, [(byte)(left[0] - 1)]);
            return new byte[] { 1 };
        });
        kv.RegisterProcedure("fail", (_, _) => throw new InvalidOperationException("the procedure refuses"));
        await kv.ConnectAsync(_coordinator);
        var log = await Own(new SpeculativeLog(Options(3), new SpeculativeLogOptions
        {
            LogDevice = DseDevices.CreateLocalFile(Path.Combine(_root, "log", "entries")),
            CommitDirectory = Path.Combine(_root, "log", "commits"),
            OwnsStorage = true,
            PageSizeBits = 16,
            MemorySizeBits = 18,
            SegmentSizeBits = 20,
            MaxEntryBytes = 1024,
        }));
        await log.ConnectAsync(_coordinator);

        var kvServer = await Own(await LoopbackGrpcServer.StartAsync(app => app.MapSpeculativeKv(), services =>
        {
            services.AddSingleton(kv);
            services.AddGrpc().AddServiceOptions<SpeculativeKvService>(o => o.Interceptors.Add<DseServerInterceptor>(kv));
        }));
        var manualServer = await Own(await LoopbackGrpcServer.StartAsync(app => app.MapManualSpeculativeKv(), services => services.AddSingleton(kv)));
        var logServer = await Own(await LoopbackGrpcServer.StartAsync(app => app.MapSpeculativeLog(), services =>
        {
            services.AddSingleton(log);
            services.AddGrpc().AddServiceOptions<SpeculativeLogService>(o => o.Interceptors.Add<DseServerInterceptor>(log));
        }));
        var targets = new (string Name, CallInvoker Invoker, string Service, string[] Methods)[]
        {
            ("kv", kvServer.Channel.CreateCallInvoker(), KvService, KvMethods),
            ("kv manual", manualServer.Channel.CreateCallInvoker(), KvService, KvMethods),
            ("log", logServer.Channel.CreateCallInvoker(), LogService, LogMethods),
        };

        var findings = new GrpcFindings();
        var lsns = new List<long>();
        var run = FuzzRun.Start($"{nameof(ServicesGrpcFuzzTests)}.{nameof(EveryMethod_MutatedRequestsAndHeaders_DocumentedStatusAndNoChangeWhenRefused)}", output, defaultInputs: 400);
        await run.RunAsync(async (seed, random) =>
        {
            var (name, invoker, service, methods) = targets[random.Next(targets.Length)];
            string method = methods[random.Next(methods.Length)];
            var valid = Enumerable.Range(0, 3).Select(_ => ValidRequest(method, random, lsns, log)).ToList();
            var (request, how) = ProtoInputs.Next(random, valid);

            // The header: a valid one (a speculative caller), none (a caller that waits for recoverability), or damaged.
            byte[] validHeader = await caller.HeaderAsync();
            byte[]? header = random.Next(10) switch
            {
                < 6 => validHeader,
                < 8 => null,
                _ => Mutations.Next(random, [validHeader, DseHeader.FromDependencies(caller.WorldLine, [new(caller.Id, caller.CurrentVersion), new(kv.Id, 1)]).ToArray()]).Bytes,
            };
            var metadata = header is null ? null : new Metadata { { DseMetadata.HeaderKey, header } };

            var before = await StateAsync(kv, log, request, method);
            var outcome = await RawGrpc.UnaryAsync(invoker, service, method, request, metadata);
            run.Tally($"{name} {outcome.Status}");
            string context = $"{name} {method} {CodecCheck.Hex(request)} ({how}) with header {(header is null ? "none" : CodecCheck.Hex(header))} answered {outcome}";
            if (outcome.IsOk && method == "Append")
            {
                lsns.AddRange(AppendReply.Parser.ParseFrom(outcome.Response).Lsns);
            }
            else if (!findings.Check($"{name} {method}", outcome, request, how, seed, header is null ? "none" : CodecCheck.Hex(header)) && !outcome.IsOk)
            {
                var after = await StateAsync(kv, log, request, method);
                Assert.True(before == after, $"a refused call changed the service: {context}\nbefore {before}\nafter  {after}");
            }

            // Still serving a speculative caller's valid request.
            var probeHeader = new Metadata { { DseMetadata.HeaderKey, await caller.HeaderAsync() } };
            var probe = service == KvService
                ? await RawGrpc.UnaryAsync(invoker, service, "Get", new GetRequest { Key = ByteString.CopyFromUtf8("a") }.ToByteArray(), probeHeader)
                : await RawGrpc.UnaryAsync(invoker, service, "Scan", new ScanRequest { FromLsn = 0, MaxEntries = 1 }.ToByteArray(), probeHeader);
            Assert.True(probe.IsOk, $"a valid request after {context}: {probe}");
        }, stateful: true);

        findings.AssertNone(run, kvServer.Logs, manualServer.Logs, logServer.Logs);
    }

    private static DseOptions Options(long id) => new() { ObjectId = id, GroupCommitPeriod = TimeSpan.FromMilliseconds(20) };

    private async Task<T> Own<T>(T disposable)
        where T : IAsyncDisposable
    {
        _owned.Add(disposable);
        return await Task.FromResult(disposable);
    }

    /// <summary>The values of the usual keys and of any key the request names, and the log's tail: what a refused call must not change.</summary>
    private static async Task<string> StateAsync(SpeculativeKv kv, SpeculativeLog log, byte[] request, string method)
    {
        var keys = Keys.Select(k => System.Text.Encoding.UTF8.GetBytes(k)).ToList();
        try
        {
            ByteString? named = method switch
            {
                "Get" => GetRequest.Parser.ParseFrom(request).Key,
                "Put" => PutRequest.Parser.ParseFrom(request).Key,
                "Delete" => DeleteRequest.Parser.ParseFrom(request).Key,
                "CompareAndSwap" => CompareAndSwapRequest.Parser.ParseFrom(request).Key,
                "Execute" => ExecuteRequest.Parser.ParseFrom(request).Input,
                _ => null,
            };
            if (named is { Length: > 0 and <= 64 })
            {
                keys.Add(named.ToByteArray());
            }
        }
        catch (InvalidProtocolBufferException)
        {
            // Not a request at all: the usual keys.
        }

        var values = new List<string>();
        await kv.StartLocalActionAsync();
        try
        {
            foreach (var key in keys)
            {
                var value = await kv.GetAsync(key);
                values.Add($"{Convert.ToHexString(key)}={(value is null ? "absent" : Convert.ToHexString(value))}");
            }
        }
        finally
        {
            kv.EndAction();
        }

        // The log's own entries (the tail also moves with the records its versions write).
        await log.StartLocalActionAsync();
        try
        {
            var entries = await log.ScanAsync(0, int.MaxValue);
            return $"{string.Join(" ", values)}; log [{string.Join(",", entries.Select(e => $"{e.Lsn}:{Convert.ToHexString(e.Data.Span)}"))}]";
        }
        finally
        {
            log.EndAction();
        }
    }

    private static IMessage ValidRequest(string method, Random random, List<long> lsns, SpeculativeLog log)
    {
        ByteString Key() => ByteString.CopyFromUtf8(Keys[random.Next(Keys.Length)]);
        ByteString Value() => ByteString.CopyFrom(Enumerable.Range(0, random.Next(0, 16)).Select(_ => (byte)random.Next(256)).ToArray());
        long Lsn() => lsns.Count > 0 && random.Next(4) > 0 ? lsns[random.Next(lsns.Count)] : random.Next(0, (int)Math.Min(int.MaxValue, log.TailLsn + 64));
        return method switch
        {
            "Get" => new GetRequest { Key = Key() },
            "Put" => new PutRequest { Key = Key(), Value = Value() },
            "Delete" => new DeleteRequest { Key = Key() },
            "CompareAndSwap" => random.Next(3) switch
            {
                0 => new CompareAndSwapRequest { Key = Key(), Expected = Value(), Value = Value() },
                1 => new CompareAndSwapRequest { Key = Key(), Value = Value() },
                _ => new CompareAndSwapRequest { Key = Key(), Expected = Value() },
            },
            "Execute" => new ExecuteRequest { Procedure = random.Next(4) switch { 0 => "fail", 1 => "missing", _ => "reserve" }, Input = Key() },
            "Append" => new AppendRequest { Entries = { Enumerable.Range(0, random.Next(1, 4)).Select(_ => Value()) } },
            "Read" => new ReadRequest { Lsn = Lsn() },
            _ => new ScanRequest { FromLsn = random.Next(3) == 0 ? 0 : Lsn(), MaxEntries = random.Next(1, 5) },
        };
    }
}
