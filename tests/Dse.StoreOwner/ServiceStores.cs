using System.Globalization;
using System.Text;
using Dse.Services;
using Dse.Storage;

namespace Dse.StoreOwner;

/// <summary>
/// The speculative log and key-value store the ownership tests and <c>Dse.StoreOwner</c> open in the same directory
/// (linked into the tests), and the orders they write: entry or key <c>order-n</c>.
/// </summary>
internal static class ServiceStores
{
    /// <summary>Runtime options: versions advance only when the code says so.</summary>
    public static DseOptions Options() =>
        new() { ObjectId = 1, GroupCommitPeriod = TimeSpan.FromMinutes(10), HeartbeatPeriod = TimeSpan.FromMinutes(10) };

    /// <summary>A speculative log with its entries in <c>{directory}/log/entries.*</c> and its commits in <c>{directory}/commits</c>.</summary>
    public static SpeculativeLog CreateLog(string directory) => new(Options(), new SpeculativeLogOptions
    {
        LogDevice = DseDevices.CreateLocalFile(Path.Combine(directory, "log", "entries")),
        CommitDirectory = Path.Combine(directory, "commits"),
        OwnsStorage = true,
        PageSizeBits = 16,
        MemorySizeBits = 18,
        SegmentSizeBits = 20,
        MaxEntryBytes = 1024,
    });

    /// <summary>A speculative key-value store in <paramref name="directory"/>.</summary>
    public static SpeculativeKv CreateKv(string directory) => new(Options(), new SpeculativeKvOptions
    {
        Directory = directory,
        IndexBuckets = 1 << 10,
        PageSizeBits = 16,
        MemorySizeBits = 20,
        SegmentSizeBits = 22,
        MaxKeyBytes = 64,
        MaxValueBytes = 1024,
    });

    /// <summary>Order <paramref name="number"/>: the log entry, and the key-value store's key and value.</summary>
    public static string Order(long number) => "order-" + number.ToString(CultureInfo.InvariantCulture);

    /// <summary>Appends orders <paramref name="first"/>.. in one action and waits until they are committed.</summary>
    public static async Task AppendOrdersAsync(SpeculativeLog log, long first, int count)
    {
        await log.StartLocalActionAsync();
        try
        {
            for (long number = first; number < first + count; number++)
            {
                log.Append(Encoding.UTF8.GetBytes(Order(number)));
            }
        }
        finally
        {
            log.EndAction();
        }

        await CommitAsync(log);
    }

    /// <summary>Puts orders <paramref name="first"/>.. (key and value alike) in one action and waits until they are committed.</summary>
    public static async Task PutOrdersAsync(SpeculativeKv kv, long first, int count)
    {
        await kv.StartLocalActionAsync();
        try
        {
            for (long number = first; number < first + count; number++)
            {
                byte[] order = Encoding.UTF8.GetBytes(Order(number));
                await kv.PutAsync(order, order);
            }
        }
        finally
        {
            kv.EndAction();
        }

        await CommitAsync(kv);
    }

    /// <summary>Every entry of the log, in order.</summary>
    public static async Task<List<string>> ReadEntriesAsync(SpeculativeLog log)
    {
        await log.StartLocalActionAsync();
        try
        {
            var entries = await log.ScanAsync(0, 10_000);
            return [.. entries.Select(e => Encoding.UTF8.GetString(e.Data.Span))];
        }
        finally
        {
            log.EndAction();
        }
    }

    /// <summary>The value of <paramref name="key"/>, or null.</summary>
    public static async Task<string?> GetAsync(SpeculativeKv kv, string key)
    {
        await kv.StartLocalActionAsync();
        try
        {
            var value = await kv.GetAsync(Encoding.UTF8.GetBytes(key));
            return value is null ? null : Encoding.UTF8.GetString(value);
        }
        finally
        {
            kv.EndAction();
        }
    }

    private static async Task CommitAsync(StateObject so)
    {
        await so.AdvanceVersionAsync();
        await so.WaitForCommitAsync(so.CurrentVersion - 1, so.WorldLine);
    }
}
