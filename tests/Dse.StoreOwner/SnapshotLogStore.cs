using System.Globalization;
using System.Text;
using Dse.Storage;

namespace Dse.StoreOwner;

/// <summary>
/// The snapshot log the ownership tests and <c>Dse.StoreOwner</c> open on the same local files (linked into the tests),
/// and the records they write: key <c>n</c> holds <c>order-n</c>.
/// </summary>
internal static class SnapshotLogStore
{
    /// <summary>Opens the snapshot log on the local files <c>{path}.*</c>, owning its device.</summary>
    public static Task<SnapshotLog> OpenAsync(string path) =>
        SnapshotLog.OpenAsync(DseDevices.CreateLocalFile(path), new SnapshotLogOptions { SegmentSize = 1 << 20, OwnsDevice = true });

    /// <summary>The payload of order <paramref name="key"/>.</summary>
    public static byte[] Order(long key) => Encoding.UTF8.GetBytes("order-" + key.ToString(CultureInfo.InvariantCulture));

    /// <summary>Appends orders <paramref name="first"/> to <paramref name="first"/> + <paramref name="count"/> - 1, each acknowledged before the next.</summary>
    public static async Task AppendOrdersAsync(SnapshotLog log, long first, int count)
    {
        for (long key = first; key < first + count; key++)
        {
            await log.AppendAsync((ulong)key, Order(key));
        }
    }
}
