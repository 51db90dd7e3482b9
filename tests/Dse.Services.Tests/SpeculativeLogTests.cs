using System.Text;
using Dse.Storage;

namespace Dse.Services.Tests;

public class SpeculativeLogTests
{
    private static byte[] B(string s) => Encoding.UTF8.GetBytes(s);

    private static string S(ReadOnlyMemory<byte> m) => Encoding.UTF8.GetString(m.Span);

    private static async Task<long> AppendAsync(SpeculativeLog log, string entry)
    {
        await log.StartLocalActionAsync();
        try
        {
            return log.Append(B(entry));
        }
        finally
        {
            log.EndAction();
        }
    }

    private static async Task<List<string>> ScanAllAsync(SpeculativeLog log)
    {
        await log.StartLocalActionAsync();
        try
        {
            var entries = await log.ScanAsync(0, 1000);
            return [.. entries.Select(e => S(e.Data))];
        }
        finally
        {
            log.EndAction();
        }
    }

    private static async Task<ReadOnlyMemory<byte>> ReadAsync(SpeculativeLog log, long lsn)
    {
        await log.StartLocalActionAsync();
        try
        {
            return await log.ReadAsync(lsn);
        }
        finally
        {
            log.EndAction();
        }
    }

    private static async Task SettleAsync(SpeculativeLog log)
    {
        await log.AdvanceVersionAsync();
        await log.WaitForCommitAsync(log.CurrentVersion - 1, log.WorldLine);
    }

    [Fact]
    public async Task Append_BeforeAnyPersist_IsReadableSpeculatively()
    {
        using var h = new LogHarness();
        await using var log = h.Open();
        await log.ConnectAsync(new ClusterCoordinator());

        long a = await AppendAsync(log, "a");
        long b = await AppendAsync(log, "b");

        Assert.True(b > a);
        Assert.True(log.DurableLsn <= a);
        Assert.Equal("b", S(await ReadAsync(log, b)));
        Assert.Equal(["a", "b"], await ScanAllAsync(log));
    }

    [Fact]
    public async Task Scan_DurableAndSpeculativeEntries_InOrderWithContinuation()
    {
        using var h = new LogHarness();
        await using var log = h.Open();
        await log.ConnectAsync(new ClusterCoordinator());
        for (int i = 0; i < 5; i++)
        {
            await AppendAsync(log, $"d{i}");
        }

        await SettleAsync(log);
        for (int i = 0; i < 3; i++)
        {
            await AppendAsync(log, $"s{i}");
        }

        await log.StartLocalActionAsync();
        var first = await log.ScanAsync(0, 4);
        var rest = await log.ScanAsync(first[^1].NextLsn, 100);
        log.EndAction();

        Assert.Equal(["d0", "d1", "d2", "d3"], first.Select(e => S(e.Data)));
        Assert.Equal(["d4", "s0", "s1", "s2"], rest.Select(e => S(e.Data)));
        Assert.True(first[^1].Lsn < log.DurableLsn && rest[^1].Lsn >= log.DurableLsn);
    }

    [Theory]
    [InlineData(true)]
    [InlineData(false)]
    public async Task Scan_FromInsideAnEntry_RefusedAsNoRecordStartsThere(bool durable)
    {
        using var h = new LogHarness();
        await using var log = h.Open();
        await log.ConnectAsync(new ClusterCoordinator());
        long first = await AppendAsync(log, "the first entry, long enough");
        long second = await AppendAsync(log, "the second entry");
        if (durable)
        {
            await SettleAsync(log);
        }

        await log.StartLocalActionAsync();
        try
        {
            var error = await Assert.ThrowsAsync<ArgumentOutOfRangeException>(() => log.ScanAsync(first + 4, 10).AsTask());
            Assert.Contains($"no record starts at LSN {first + 4}", error.Message, StringComparison.Ordinal);
            Assert.Equal(2, (await log.ScanAsync(first, 10)).Count);
            Assert.Equal("the second entry", S(Assert.Single(await log.ScanAsync(second, 10)).Data));
        }
        finally
        {
            log.EndAction();
        }

        Assert.Equal(durable, first + 4 < log.DurableLsn);
    }

    [Fact]
    [Trait("Category", "Recovery")]
    public async Task Restart_DependentReadSpeculativeEntry_BothRollBackToCommittedVersion()
    {
        using var h = new LogHarness();
        var coordinator = new ClusterCoordinator();
        var log = h.Open(1);
        await log.ConnectAsync(coordinator);
        long committed = await AppendAsync(log, "v1");
        await SettleAsync(log);

        long speculative = await AppendAsync(log, "v2");

        // A dependent object reads the speculative entry: it now depends on the log's version 2.
        var dependent = await Dse.Services.Tests.Support.ProbeObject.ConnectAsync(coordinator, 2);
        await log.StartLocalActionAsync();
        Assert.Equal("v2", S(await log.ReadAsync(speculative)));
        var header = log.EndAction();
        Assert.True(await dependent.StartActionAsync(header));
        dependent.Observed = "v2";
        dependent.EndAction();
        await dependent.AdvanceVersionAsync();

        // The log crashes before persisting version 2 and restarts on the same storage.
        await log.DisposeAsync();
        await using var log2 = h.Open(1);
        await log2.ConnectAsync(coordinator);
        await dependent.RefreshAsync();

        Assert.Equal(["v1"], await ScanAllAsync(log2));
        Assert.Equal("v1", S(await ReadAsync(log2, committed)));
        Assert.Equal(1, dependent.WorldLine);
        Assert.Null(dependent.Observed);
        await dependent.DisposeAsync();
    }

    [Fact]
    [Trait("Category", "Recovery")]
    public async Task Restore_PersistedLaterVersion_DroppedDurablyAndNeverReadable()
    {
        using var h = new LogHarness();
        var coordinator = new ClusterCoordinator();
        var log = h.Open(1);
        var dependent = await Dse.Services.Tests.Support.ProbeObject.ConnectAsync(coordinator, 2);
        await log.ConnectAsync(coordinator);
        await AppendAsync(log, "v1");
        await SettleAsync(log);

        // Version 2 is durable in the log but depends on the dependent's version that is lost.
        Assert.True(await dependent.StartActionAsync(default(DseHeader)));
        var fromDependent = dependent.EndAction();
        Assert.True(await log.StartActionAsync(fromDependent));
        long dropped = log.Append(B("v2"));
        log.EndAction();
        await log.AdvanceVersionAsync();

        // The dependent restarts without having persisted: the log must restore version 1 and drop version 2.
        await dependent.DisposeAsync();
        await using var dependent2 = Dse.Services.Tests.Support.ProbeObject.Create(2);
        await dependent2.ConnectAsync(coordinator);
        await log.RefreshAsync();

        Assert.Equal(["v1"], await ScanAllAsync(log));
        var ex = await Assert.ThrowsAsync<ArgumentOutOfRangeException>(() => ReadAsync(log, dropped));
        Assert.Contains("rolled back", ex.Message, StringComparison.Ordinal);
        long after = await AppendAsync(log, "v2b");
        Assert.True(after > dropped);

        // A crash now: the reopened log lists no dropped version and still hides the dropped entry.
        await log.DisposeAsync();
        await using var log2 = h.Open(1);
        await log2.ConnectAsync(coordinator);
        Assert.Equal(["v1"], await ScanAllAsync(log2));
        await Assert.ThrowsAsync<ArgumentOutOfRangeException>(() => ReadAsync(log2, dropped));
    }

    [Fact]
    [Trait("Category", "Recovery")]
    public async Task Reopen_AfterCleanCommits_RecoversEntriesWithoutScan()
    {
        using var h = new LogHarness();
        var coordinator = new ClusterCoordinator();
        var log = h.Open();
        await log.ConnectAsync(coordinator);
        var lsns = new List<long>();
        for (int v = 0; v < 3; v++)
        {
            lsns.Add(await AppendAsync(log, $"e{v}"));
            await SettleAsync(log);
        }

        long durable = log.DurableLsn;
        await log.DisposeAsync();

        await using var log2 = h.Open();
        await log2.ConnectAsync(coordinator);
        Assert.Equal(durable, log2.DurableLsn);
        Assert.Equal(["e0", "e1", "e2"], await ScanAllAsync(log2));
        Assert.Equal("e1", S(await ReadAsync(log2, lsns[1])));
    }

    [Fact]
    [Trait("Category", "Recovery")]
    public async Task Reopen_CommittedTailLostByCrashCut_ThrowsNamingAddress()
    {
        using var h = new LogHarness();
        var coordinator = new ClusterCoordinator();
        FaultInjectingDevice? faults = null;
        var log = h.Open(wrap: d => faults = d.WithFaults());
        await log.ConnectAsync(coordinator);
        await AppendAsync(log, "kept");
        await SettleAsync(log);

        // The device acknowledges but loses every later write, while the commit record (in its own directory) survives.
        faults!.CutNow();
        await AppendAsync(log, "lost");
        await SettleAsync(log);
        await log.DisposeAsync();

        await using var log2 = h.Open();
        var ex = await Assert.ThrowsAsync<InvalidDataException>(() => log2.ConnectAsync(coordinator).AsTask());
        Assert.Contains("address", ex.Message, StringComparison.Ordinal);
    }

    [Fact]
    public async Task Read_BadLsns_ClearErrors()
    {
        using var h = new LogHarness();
        await using var log = h.Open(maxEntryBytes: 100);
        await log.ConnectAsync(new ClusterCoordinator());
        long a = await AppendAsync(log, "a");
        long b = await AppendAsync(log, "b");
        await SettleAsync(log);

        var beyond = await Assert.ThrowsAsync<ArgumentOutOfRangeException>(() => ReadAsync(log, log.TailLsn + 8));
        Assert.Contains("tail", beyond.Message, StringComparison.Ordinal);
        var inside = await Assert.ThrowsAsync<InvalidDataException>(() => ReadAsync(log, a + 4));
        Assert.Contains($"address {a + 4}", inside.Message, StringComparison.Ordinal);
        var commitRecord = await Assert.ThrowsAsync<ArgumentOutOfRangeException>(() => ReadAsync(log, b + 16));
        Assert.Contains("Commit record", commitRecord.Message, StringComparison.Ordinal);

        await log.StartLocalActionAsync();
        Assert.Throws<ArgumentOutOfRangeException>(() => log.Append(new byte[101]));
        log.TruncateBefore(b);
        log.EndAction();
        var truncated = await Assert.ThrowsAsync<ArgumentOutOfRangeException>(() => ReadAsync(log, a));
        Assert.Contains("truncated", truncated.Message, StringComparison.Ordinal);
        Assert.Equal(["b"], await ScanAllAsync(log));
    }

    [Fact]
    [Trait("Category", "Recovery")]
    public async Task Prune_AfterTruncateCommits_ReclaimsAndForgetsOldVersions()
    {
        using var h = new LogHarness();
        var coordinator = new ClusterCoordinator();
        var log = h.Open();
        await log.ConnectAsync(coordinator);
        var payload = new string('x', 3000);
        long last = 0;
        for (int i = 0; i < 60; i++)
        {
            last = await AppendAsync(log, payload);
        }

        await SettleAsync(log);
        await log.StartLocalActionAsync();
        log.TruncateBefore(last);
        log.EndAction();
        await SettleAsync(log);
        await SettleAsync(log);   // the commit of the truncating version prunes it
        await SettleAsync(log);

        Assert.True(log.BeginLsn == last);
        Assert.Single(await ScanAllAsync(log));
        await log.DisposeAsync();

        await using var log2 = h.Open();
        await log2.ConnectAsync(coordinator);
        Assert.Single(await ScanAllAsync(log2));
        Assert.Equal(last, log2.BeginLsn);
    }

    [Fact]
    public async Task Append_ConcurrentActions_AllEntriesReadableOnce()
    {
        using var h = new LogHarness();
        await using var log = h.Open();
        await log.ConnectAsync(new ClusterCoordinator());
        var writers = Enumerable.Range(0, 4).Select(w => Task.Run(async () =>
        {
            var mine = new List<long>();
            for (int i = 0; i < 50; i++)
            {
                mine.Add(await AppendAsync(log, $"{w}:{i}"));
                if (i % 10 == 0 && w == 0)
                {
                    await log.AdvanceVersionAsync();
                }
            }

            return mine;
        })).ToArray();
        var lsns = (await Task.WhenAll(writers)).SelectMany(l => l).ToList();
        await SettleAsync(log);

        Assert.Equal(200, lsns.Distinct().Count());
        var all = await ScanAllAsync(log);
        Assert.Equal(200, all.Count);
        for (int w = 0; w < 4; w++)
        {
            Assert.Equal(Enumerable.Range(0, 50).Select(i => $"{w}:{i}"), all.Where(s => s.StartsWith($"{w}:", StringComparison.Ordinal)));
        }
    }
}
