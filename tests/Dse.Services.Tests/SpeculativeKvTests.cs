using System.Buffers.Binary;
using System.Text;
using Dse.Services.Tests.Support;

namespace Dse.Services.Tests;

public class SpeculativeKvTests
{
    private static byte[] B(string s) => Encoding.UTF8.GetBytes(s);

    private static string? S(byte[]? b) => b is null ? null : Encoding.UTF8.GetString(b);

    private static async Task PutAsync(SpeculativeKv kv, string key, string value)
    {
        await kv.StartLocalActionAsync();
        try
        {
            await kv.PutAsync(B(key), B(value));
        }
        finally
        {
            kv.EndAction();
        }
    }

    private static async Task<string?> GetAsync(SpeculativeKv kv, string key)
    {
        await kv.StartLocalActionAsync();
        try
        {
            return S(await kv.GetAsync(B(key)));
        }
        finally
        {
            kv.EndAction();
        }
    }

    private static async Task SettleAsync(StateObject so)
    {
        await so.AdvanceVersionAsync();
        await so.WaitForCommitAsync(so.CurrentVersion - 1, so.WorldLine);
    }

    [Fact]
    public async Task Writes_OnAStripeAnotherWriteHolds_WaitWithoutAThreadThenApplyInOrder()
    {
        using var h = new KvHarness();
        await using var kv = await h.OpenAsync(new ClusterCoordinator());
        await kv.StartLocalActionAsync();
        var held = await kv.HoldStripeForTestAsync(B("k"));

        // Each call returns at once, its write pending: a waiting write holds no thread (a blocked one here would never return).
        var put = kv.PutAsync(B("k"), B("v"));
        var swap = kv.CompareAndSwapAsync(B("k"), B("v"), B("w"));
        var delete = kv.DeleteAsync(B("other"));
        Assert.False(put.IsCompleted);
        Assert.False(swap.IsCompleted);
        Assert.Null(await kv.GetAsync(B("k")));

        held.Dispose();
        await put;
        Assert.True(await swap);
        Assert.False(await delete);
        Assert.Equal("w", S(await kv.GetAsync(B("k"))));
        kv.EndAction();
    }

    [Fact]
    public async Task PutGetDelete_InsideActions_VisibleAtOnce()
    {
        using var h = new KvHarness();
        await using var kv = await h.OpenAsync(new ClusterCoordinator());
        await kv.StartLocalActionAsync();
        Assert.Null(await kv.GetAsync(B("k")));
        await kv.PutAsync(B("k"), B("v"));
        Assert.Equal("v", S(await kv.GetAsync(B("k"))));
        Assert.True(await kv.DeleteAsync(B("k")));
        Assert.False(await kv.DeleteAsync(B("k")));
        Assert.Null(await kv.GetAsync(B("k")));
        kv.EndAction();
    }

    [Fact]
    public async Task CompareAndSwap_ExpectedAbsentPresentOrDelete_SwapsOnlyOnMatch()
    {
        using var h = new KvHarness();
        await using var kv = await h.OpenAsync(new ClusterCoordinator());
        await kv.StartLocalActionAsync();
        Assert.True(await kv.CompareAndSwapAsync(B("k"), null, B("1")));
        Assert.False(await kv.CompareAndSwapAsync(B("k"), null, B("2")));
        Assert.False(await kv.CompareAndSwapAsync(B("k"), B("0"), B("2")));
        Assert.True(await kv.CompareAndSwapAsync(B("k"), B("1"), B("2")));
        Assert.Equal("2", S(await kv.GetAsync(B("k"))));
        Assert.True(await kv.CompareAndSwapAsync(B("k"), B("2"), null));
        Assert.Null(await kv.GetAsync(B("k")));
        kv.EndAction();
    }

    [Fact]
    public async Task BadInput_EmptyOrOversized_ClearErrorsAndNothingWritten()
    {
        using var h = new KvHarness();
        await using var kv = await h.OpenAsync(new ClusterCoordinator());
        await kv.StartLocalActionAsync();
        var empty = await Assert.ThrowsAsync<ArgumentException>(() => kv.PutAsync(ReadOnlyMemory<byte>.Empty, B("v")).AsTask());
        Assert.Contains("empty", empty.Message, StringComparison.Ordinal);
        var longKey = await Assert.ThrowsAsync<ArgumentException>(() => kv.GetAsync(new byte[65]).AsTask());
        Assert.Contains("65 bytes", longKey.Message, StringComparison.Ordinal);
        var longValue = await Assert.ThrowsAsync<ArgumentException>(() => kv.PutAsync(B("k"), new byte[4097]).AsTask());
        Assert.Contains("4097", longValue.Message, StringComparison.Ordinal);
        await Assert.ThrowsAsync<KeyNotFoundException>(() => kv.RunProcedureAsync("nope", default).AsTask());
        Assert.Throws<ArgumentNullException>(() => kv.RegisterProcedure("p", null!));
        Assert.Null(await kv.GetAsync(B("k")));
        kv.EndAction();
    }

    [Fact]
    public async Task RunProcedure_TransferAndThrowingProcedure_AtomicAllOrNothing()
    {
        using var h = new KvHarness();
        await using var kv = await h.OpenAsync(new ClusterCoordinator());
        kv.RegisterProcedure("transfer", (ctx, input) =>
        {
            long amount = BinaryPrimitives.ReadInt64LittleEndian(input.Span);
            long from = long.Parse(S(ctx.Get(B("a")))!, System.Globalization.CultureInfo.InvariantCulture);
            long to = long.Parse(S(ctx.Get(B("b")))!, System.Globalization.CultureInfo.InvariantCulture);
            ctx.Put(B("a"), B((from - amount).ToString(System.Globalization.CultureInfo.InvariantCulture)));
            if (from < amount)
            {
                throw new InvalidOperationException("insufficient funds");
            }

            ctx.Put(B("b"), B((to + amount).ToString(System.Globalization.CultureInfo.InvariantCulture)));
            return B("ok");
        });
        await PutAsync(kv, "a", "10");
        await PutAsync(kv, "b", "0");

        var amount = new byte[8];
        BinaryPrimitives.WriteInt64LittleEndian(amount, 7);
        await kv.StartLocalActionAsync();
        Assert.Equal("ok", S((await kv.RunProcedureAsync("transfer", amount)).ToArray()));
        await Assert.ThrowsAsync<InvalidOperationException>(() => kv.RunProcedureAsync("transfer", amount).AsTask());
        kv.EndAction();

        Assert.Equal("3", await GetAsync(kv, "a"));
        Assert.Equal("7", await GetAsync(kv, "b"));
    }

    [Fact]
    [Trait("Category", "Recovery")]
    public async Task Restart_ObjectItselfBeforePersist_ReturnsToCommittedVersion()
    {
        using var h = new KvHarness();
        var coordinator = new ClusterCoordinator();
        var kv = await h.OpenAsync(coordinator);
        await PutAsync(kv, "k", "v1");
        await SettleAsync(kv);
        await PutAsync(kv, "k", "v2");
        await PutAsync(kv, "new", "x");
        Assert.Equal("v2", await GetAsync(kv, "k"));

        await kv.DisposeAsync();   // crash: version 2 was never persisted
        await using var kv2 = await h.OpenAsync(coordinator);

        Assert.Equal("v1", await GetAsync(kv2, "k"));
        Assert.Null(await GetAsync(kv2, "new"));
    }

    [Fact]
    [Trait("Category", "Recovery")]
    public async Task Restart_DependencyOfPersistedVersion_RestoresInPlaceAndDropsDurably()
    {
        using var h = new KvHarness();
        var coordinator = new ClusterCoordinator();
        var dependency = await ProbeObject.ConnectAsync(coordinator, 2);
        var kv = await h.OpenAsync(coordinator);
        await PutAsync(kv, "k", "v1");
        await SettleAsync(kv);

        // Version 2 consumes the dependency's (never durable) output and is persisted durably.
        Assert.True(await dependency.StartActionAsync(default(DseHeader)));
        var header = dependency.EndAction();
        Assert.True(await kv.StartActionAsync(header));
        await kv.PutAsync(B("k"), B("v2"));
        kv.EndAction();
        await kv.AdvanceVersionAsync();

        await dependency.DisposeAsync();
        await using var dependency2 = ProbeObject.Create(2);
        await dependency2.ConnectAsync(coordinator);
        await kv.RefreshAsync();

        Assert.Equal(1, kv.WorldLine);
        Assert.Equal("v1", await GetAsync(kv, "k"));
        await PutAsync(kv, "k", "v3");
        Assert.Equal("v3", await GetAsync(kv, "k"));

        // Crash and reopen: the dropped version is never listed or restored again.
        await kv.DisposeAsync();
        await using var kv2 = await h.OpenAsync(coordinator);
        Assert.Equal("v1", await GetAsync(kv2, "k"));
    }

    [Fact]
    [Trait("Category", "Recovery")]
    public async Task Reopen_ManyVersionsMixedCheckpoints_RecoversLatestAndPrunesOldCheckpoints()
    {
        using var h = new KvHarness();
        var coordinator = new ClusterCoordinator();
        var kv = await h.OpenAsync(coordinator, indexCheckpointInterval: 3);
        for (int v = 1; v <= 8; v++)
        {
            await PutAsync(kv, $"k{v}", $"v{v}");
            await PutAsync(kv, "last", $"v{v}");
            await SettleAsync(kv);
        }

        await SettleAsync(kv);   // the last commit prunes what came before
        Assert.InRange((await kv.ListPersistedVersionsForTestAsync()).Count, 1, 3);
        Assert.Empty(Directory.GetFiles(Path.Combine(h.Directory, "manifests"), "*.manifest"));
        await kv.DisposeAsync();

        await using var kv2 = await h.OpenAsync(coordinator, indexCheckpointInterval: 3);
        for (int v = 1; v <= 8; v++)
        {
            Assert.Equal($"v{v}", await GetAsync(kv2, $"k{v}"));
        }

        Assert.Equal("v8", await GetAsync(kv2, "last"));
    }

    [Fact]
    [Trait("Category", "Recovery")]
    public async Task Reopen_CorruptManifestRecord_ThrowsNamingFileAndOffset()
    {
        using var h = new KvHarness();
        var coordinator = new ClusterCoordinator();
        var kv = await h.OpenAsync(coordinator);
        await PutAsync(kv, "k", "v");
        await SettleAsync(kv);
        await PutAsync(kv, "k", "w");
        await SettleAsync(kv);
        await kv.DisposeAsync();

        // A flipped byte in the first record is corruption, not a torn tail: records follow it.
        string log = Path.Combine(h.Directory, "manifests", "manifests.log");
        var bytes = await File.ReadAllBytesAsync(log);
        bytes[20] ^= 0xFF;
        await File.WriteAllBytesAsync(log, bytes);

        await using var kv2 = h.Create();
        var ex = await Assert.ThrowsAsync<InvalidDataException>(() => kv2.ConnectAsync(coordinator).AsTask());
        Assert.Contains("manifests.log", ex.Message, StringComparison.Ordinal);
        Assert.Contains("at byte 0", ex.Message, StringComparison.Ordinal);
    }

    [Fact]
    [Trait("Category", "Recovery")]
    public async Task ConcurrentActions_PutsAndCasIncrementsAcrossVersionAdvances_NothingLost()
    {
        using var h = new KvHarness();
        var coordinator = new ClusterCoordinator();
        // Index checkpoints take about a second each here: keep to the first one.
        var kv = await h.OpenAsync(coordinator, indexCheckpointInterval: 1000);
        await PutAsync(kv, "counter", "0");
        const int Workers = 4;
        const int PerWorker = 40;
        var workers = Enumerable.Range(0, Workers).Select(w => Task.Run(async () =>
        {
            for (int i = 0; i < PerWorker; i++)
            {
                await kv.StartLocalActionAsync();
                try
                {
                    await kv.PutAsync(B($"w{w}-{i}"), B($"{i}"));
                    while (true)
                    {
                        var current = await kv.GetAsync(B("counter"));
                        long next = long.Parse(S(current)!, System.Globalization.CultureInfo.InvariantCulture) + 1;
                        if (await kv.CompareAndSwapAsync(B("counter"), current, B(next.ToString(System.Globalization.CultureInfo.InvariantCulture))))
                        {
                            break;
                        }
                    }
                }
                finally
                {
                    kv.EndAction();
                }
            }
        })).ToList();
        var advancer = Task.Run(async () =>
        {
            for (int i = 0; i < 20 && !workers.All(t => t.IsCompleted); i++)
            {
                await kv.AdvanceVersionAsync();
            }
        });
        await Task.WhenAll(workers);
        await advancer;
        await SettleAsync(kv);

        Assert.Equal($"{Workers * PerWorker}", await GetAsync(kv, "counter"));
        await kv.DisposeAsync();
        await using var kv2 = await h.OpenAsync(coordinator, indexCheckpointInterval: 1000);
        Assert.Equal($"{Workers * PerWorker}", await GetAsync(kv2, "counter"));
        Assert.Equal($"{PerWorker - 1}", await GetAsync(kv2, $"w{Workers - 1}-{PerWorker - 1}"));
    }
}
