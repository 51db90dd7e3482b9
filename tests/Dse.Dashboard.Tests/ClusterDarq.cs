using Dse.Darq;
using Dse.Storage;
using DarqQueue = Dse.Darq.Darq;

namespace Dse.Dashboard.Tests;

/// <summary>
/// DARQs under general speculation on in-memory devices: participants of a test's coordinator whose heartbeats report
/// their version, barrier waits and depths, as a deployed DARQ's do.
/// </summary>
internal static class ClusterDarq
{
    /// <summary>Opens DARQ <paramref name="name"/> as participant <paramref name="id"/> of <paramref name="coordinator"/>.</summary>
    /// <param name="heartbeatPeriod">How often its heartbeats carry its statistics.</param>
    /// <param name="destinations">Where its OUT messages go; a name it does not resolve keeps them pending.</param>
    public static Task<DarqQueue> OpenAsync(string name, long id, IDseCoordinator coordinator, TimeSpan heartbeatPeriod, IDarqDestinations? destinations = null) =>
        DarqQueue.OpenAsync(new DarqOptions
        {
            Name = name,
            LogDevice = DseDevices.CreateInMemory(),
            CommitDevice = DseDevices.CreateInMemory(),
            PageSize = 1 << 16,
            MemorySize = 1 << 18,
            SegmentSize = 1 << 17,
            MaxMessageSize = 1 << 12,
            MaxProducers = 16,
            Speculation = DarqSpeculationMode.General,
            Dse = new DseOptions { ObjectId = id, HeartbeatPeriod = heartbeatPeriod },
            Coordinator = coordinator,
            Destinations = destinations ?? new DarqDestinationRegistry(),
        });

    /// <summary>The UTF-8 bytes of <paramref name="text"/>.</summary>
    public static ReadOnlyMemory<byte> Bytes(string text) => System.Text.Encoding.UTF8.GetBytes(text);
}
