using System.Reflection;
using System.Runtime.CompilerServices;
using FASTER.core;

namespace Dse.Storage;

/// <summary>
/// Which records of one FasterLog this process wrote and still holds in memory: their length words were written by
/// <see cref="FasterLog.Enqueue(byte[])"/>, which frames them correctly, and FasterLog's iterator reads them from memory,
/// so checking them would cost a device read for nothing. Every other word may come from the device.
/// </summary>
/// <remarks>
/// A word at <c>a</c> is in memory and this process's own when <c>a</c> is at or after <see cref="_ownFrom"/> (the log's
/// tail when <see cref="FasterLogs"/> first read the log: recovery loaded everything before it from the device, including the
/// tail page it put in memory) and at or after the allocator's head address (below it FasterLog reads pages from the
/// device). FasterLog does not expose its head address: it is read from the log's allocator through reflection, and
/// when that fails (a FasterLog version without these fields) no word counts as resident, which only costs device
/// reads. A page evicted between this check and the iterator's read is read back from the device: a word this process
/// wrote there moments before, so only storage that changes bytes under a running process could then damage it.
/// </remarks>
internal sealed class FasterLogResidency
{
    private static readonly ConditionalWeakTable<FasterLog, FasterLogResidency> Logs = new();

    private static readonly FieldInfo? AllocatorField = typeof(FasterLog).GetField("allocator", BindingFlags.Instance | BindingFlags.NonPublic);

    /// <summary>The allocator's (internal type's) public <c>HeadAddress</c> field: where the pages in memory begin.</summary>
    private static readonly FieldInfo? HeadAddressField = AllocatorField?.FieldType.GetField("HeadAddress", BindingFlags.Instance | BindingFlags.Public);

    private readonly object? _allocator;

    /// <summary>Where the records this process appended begin; fixed when the log is first seen.</summary>
    private readonly long _ownFrom;

    private FasterLogResidency(FasterLog log)
    {
        _allocator = HeadAddressField is null ? null : AllocatorField!.GetValue(log);
        _ownFrom = log.TailAddress;
    }

    /// <summary>
    /// The residency of <paramref name="log"/>, created at the first call: the first <see cref="FasterLogs"/> read of a
    /// log comes after its recovery (reading an unrecovered log finds nothing committed) and before it appends anything.
    /// Called later than that, it only counts fewer words as resident.
    /// </summary>
    public static FasterLogResidency Of(FasterLog log) => Logs.GetValue(log, static l => new FasterLogResidency(l));

    /// <summary>
    /// Whether the length word at <paramref name="address"/> is one this process wrote and FasterLog holds in memory.
    /// Called once per scan and per page the scan enters, not per entry (the read boxes).
    /// </summary>
    public bool IsOwnInMemory(long address) =>
        address >= _ownFrom && _allocator is not null && HeadAddressField!.GetValue(_allocator) is long head && address >= head;
}
