using System.Globalization;
using System.Text;
using Dse.Storage;

namespace Dse.StoreOwner;

/// <summary>
/// The storage ownership tests' child: opens one of the stores on storage the test names, writes orders to it and
/// either holds it (until standard input closes, or the test kills it with SIGKILL) or closes it at once.
/// </summary>
/// <remarks>
/// <para>Arguments: <c>snapshot-log PATH</c>, <c>speculative-log DIRECTORY</c> or <c>speculative-kv DIRECTORY</c>, then
/// <c>hold</c> or <c>write</c>, then the first order's number and how many orders to write (see
/// <see cref="SnapshotLogStore"/> and <see cref="ServiceStores"/> for the layouts).</para>
/// <para>Output: <c>READY n</c> once <c>hold</c> wrote its n orders durably (then it waits for standard input to close
/// and disposes the store); <c>WROTE n</c> once <c>write</c> wrote them and disposed the store. An open refused because
/// another instance owns the storage prints <c>REFUSED message</c> and exits 3; other errors go to standard error with
/// exit code 4; bad arguments exit 2.</para>
/// </remarks>
internal static class Program
{
    private const int ExitUsage = 2;
    private const int ExitRefused = 3;
    private const int ExitFailed = 4;
    private const string Usage = "usage: Dse.StoreOwner (snapshot-log PATH | speculative-log DIRECTORY | speculative-kv DIRECTORY) (hold | write) FIRST COUNT";

    public static async Task<int> Main(string[] args)
    {
        if (args.Length != 5 || args[2] is not ("hold" or "write")
            || !long.TryParse(args[3], CultureInfo.InvariantCulture, out long first) || first < 1
            || !int.TryParse(args[4], CultureInfo.InvariantCulture, out int count) || count < 0)
        {
            await Console.Error.WriteLineAsync(Usage);
            return ExitUsage;
        }

        bool hold = args[2] == "hold";
        await using var output = new StreamWriter(Console.OpenStandardOutput(), new UTF8Encoding(encoderShouldEmitUTF8Identifier: false)) { AutoFlush = true };
        try
        {
            switch (args[0])
            {
                case "snapshot-log":
                    await using (var log = await SnapshotLogStore.OpenAsync(args[1]))
                    {
                        await SnapshotLogStore.AppendOrdersAsync(log, first, count);
                        await ReportAsync(output, hold, count);
                    }

                    break;
                case "speculative-log":
                    await using (var coordinator = new ClusterCoordinator())
                    await using (var log = ServiceStores.CreateLog(args[1]))
                    {
                        await log.ConnectAsync(coordinator);
                        await ServiceStores.AppendOrdersAsync(log, first, count);
                        await ReportAsync(output, hold, count);
                    }

                    break;
                case "speculative-kv":
                    await using (var coordinator = new ClusterCoordinator())
                    await using (var kv = ServiceStores.CreateKv(args[1]))
                    {
                        await kv.ConnectAsync(coordinator);
                        await ServiceStores.PutOrdersAsync(kv, first, count);
                        await ReportAsync(output, hold, count);
                    }

                    break;
                default:
                    await Console.Error.WriteLineAsync($"unknown store '{args[0]}'\n{Usage}");
                    return ExitUsage;
            }
        }
        catch (StorageFencedException e)
        {
            await output.WriteLineAsync("REFUSED " + e.Message.ReplaceLineEndings(" "));
            return ExitRefused;
        }
        catch (Exception e)
        {
            await Console.Error.WriteLineAsync(e.ToString());
            return ExitFailed;
        }

        if (!hold)
        {
            await output.WriteLineAsync("WROTE " + count.ToString(CultureInfo.InvariantCulture));
        }

        return 0;
    }

    /// <summary>For <c>hold</c>: says the orders are durable and waits, store open, until standard input closes.</summary>
    private static async Task ReportAsync(StreamWriter output, bool hold, int count)
    {
        if (hold)
        {
            await output.WriteLineAsync("READY " + count.ToString(CultureInfo.InvariantCulture));
            while (await Console.In.ReadLineAsync() is not null)
            {
            }
        }
    }
}
