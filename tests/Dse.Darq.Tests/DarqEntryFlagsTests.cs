using System.Buffers.Binary;
using System.IO.Hashing;

namespace Dse.Darq.Tests;

/// <summary>Entry flags: the ones this build knows are read; any other is refused, since it could change the entry's meaning.</summary>
public sealed class DarqEntryFlagsTests
{
    [Fact]
    public void TryParse_KnownFlags_Accepted()
    {
        var activity = DarqEntryFormat.Self(7, [1, 2, 3], DarqEntryFormat.ActivityFlag);
        Assert.Null(DarqEntryFormat.TryParse(activity, out var kind, out ushort flags, out long sequence));
        Assert.Equal(DarqEntryKind.Self, kind);
        Assert.Equal(DarqEntryFormat.ActivityFlag, flags);
        Assert.Equal(7, sequence);

        var deduplicated = DarqEntryFormat.In(8, [4], producerId: 3, producerSequence: 1, dedup: true);
        Assert.Null(DarqEntryFormat.TryParse(deduplicated, out kind, out flags, out _));
        Assert.Equal(DarqEntryKind.In, kind);
        Assert.Equal(DarqEntryFormat.HasDedupFlag, flags);
    }

    [Fact]
    public void TryParse_UnknownSelfFlag_RefusedNamingTheFlag()
    {
        // A correctly sealed entry (valid checksum) with a flag from a later revision.
        var entry = DarqEntryFormat.Self(7, [1, 2, 3], flags: 0x0004);

        string? error = DarqEntryFormat.TryParse(entry, out _, out _, out _);

        Assert.NotNull(error);
        Assert.Contains("unknown flags 0x0004", error, StringComparison.Ordinal);
    }

    [Fact]
    public void TryParse_FlagOnAKindWithoutFlags_Refused()
    {
        var completion = DarqEntryFormat.Completion(9, incarnation: 1, stepEntryCount: 0, consumed: [42]);
        completion[2] = 1;
        Reseal(completion);

        string? error = DarqEntryFormat.TryParse(completion, out _, out _, out _);

        Assert.NotNull(error);
        Assert.Contains("Completion entry has unknown flags 0x0001", error, StringComparison.Ordinal);
    }

    /// <summary>Writes the version-2 checksum docs/darq-format.md defines: XXH3 of the entry with the checksum field zero.</summary>
    private static void Reseal(byte[] entry)
    {
        BinaryPrimitives.WriteUInt64LittleEndian(entry.AsSpan(16), 0);
        BinaryPrimitives.WriteUInt64LittleEndian(entry.AsSpan(16), XxHash3.HashToUInt64(entry));
    }
}
