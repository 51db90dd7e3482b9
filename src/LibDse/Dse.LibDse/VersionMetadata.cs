using System.Buffers.Binary;

namespace Dse;

/// <summary>
/// Codec of the metadata the runtime stores with every persisted version, so the persisted graph is the point of
/// truth: magic, format version, world-line and the dependency fragment. Layout: <c>docs/header-format.md</c>.
/// </summary>
public static class VersionMetadata
{
    /// <summary>First byte of encoded metadata.</summary>
    public const byte Magic = 0xD6;

    /// <summary>The format version this build writes and reads.</summary>
    public const byte FormatVersion = 1;

    private const int FixedLength = 16;

    /// <summary>Encodes the metadata of a version.</summary>
    public static byte[] Encode(long worldLine, IReadOnlyList<Dependency> dependencies)
    {
        ArgumentNullException.ThrowIfNull(dependencies);
        var bytes = new byte[FixedLength + (16 * dependencies.Count)];
        bytes[0] = Magic;
        bytes[1] = FormatVersion;
        BinaryPrimitives.WriteInt64LittleEndian(bytes.AsSpan(4), worldLine);
        BinaryPrimitives.WriteInt32LittleEndian(bytes.AsSpan(12), dependencies.Count);
        int offset = FixedLength;
        for (int i = 0; i < dependencies.Count; i++)
        {
            BinaryPrimitives.WriteInt64LittleEndian(bytes.AsSpan(offset), dependencies[i].ObjectId);
            BinaryPrimitives.WriteInt64LittleEndian(bytes.AsSpan(offset + 8), dependencies[i].Version);
            offset += 16;
        }

        return bytes;
    }

    /// <summary>Decodes the metadata of <paramref name="version"/> into a report.</summary>
    /// <exception cref="DseHeaderFormatException">
    /// The metadata is truncated, not DSE version metadata, has reserved bytes set, or holds a negative world-line, id or
    /// version.
    /// </exception>
    public static VersionReport Decode(long version, ReadOnlySpan<byte> metadata)
    {
        var report = DecodeLayout(version, metadata);
        if (Implausibility(report) is { } reason)
        {
            throw new DseHeaderFormatException($"Metadata of {reason}.");
        }

        return report;
    }

    /// <summary>Decodes the layout only: the values may still be ones the coordinator refuses (see <see cref="Implausibility"/>).</summary>
    private static VersionReport DecodeLayout(long version, ReadOnlySpan<byte> metadata)
    {
        if (metadata.Length < FixedLength)
        {
            throw new DseHeaderFormatException($"Metadata of version {version} is truncated: {metadata.Length} bytes, at least {FixedLength} needed.");
        }

        if (metadata[0] != Magic)
        {
            throw new DseHeaderFormatException($"Metadata of version {version} is not DSE version metadata (first byte 0x{metadata[0]:X2}).");
        }

        if (metadata[1] != FormatVersion)
        {
            throw new DseHeaderFormatException($"Metadata of version {version} has unsupported format version {metadata[1]}.");
        }

        if (metadata[2] != 0 || metadata[3] != 0)
        {
            throw new DseHeaderFormatException($"Metadata of version {version} has reserved bytes set (0x{metadata[2]:X2}{metadata[3]:X2}).");
        }

        long worldLine = BinaryPrimitives.ReadInt64LittleEndian(metadata[4..]);
        int count = BinaryPrimitives.ReadInt32LittleEndian(metadata[12..]);
        if (count < 0 || metadata.Length != FixedLength + (16L * count))
        {
            throw new DseHeaderFormatException($"Metadata of version {version} claims {count} dependencies but has {metadata.Length} bytes.");
        }

        var deps = new Dependency[count];
        int offset = FixedLength;
        for (int i = 0; i < count; i++)
        {
            deps[i] = new Dependency(BinaryPrimitives.ReadInt64LittleEndian(metadata[offset..]), BinaryPrimitives.ReadInt64LittleEndian(metadata[(offset + 8)..]));
            offset += 16;
        }

        return new VersionReport(version, worldLine, deps);
    }

    /// <summary>
    /// Decodes what <c>ListVersionsAsync</c> returned for <paramref name="objectId"/>, checking its order. A version the
    /// coordinator would refuse (see <see cref="Implausibility"/>) could never commit, nor could any after it: the
    /// listing ends before it and <paramref name="discarded"/> says why, so the StateObject restarts as if a crash had
    /// lost those versions (the coordinator rolls back whatever depended on them).
    /// </summary>
    /// <exception cref="InvalidOperationException">The versions are not positive and ascending.</exception>
    /// <exception cref="DseHeaderFormatException">Stored metadata is corrupt.</exception>
    internal static List<VersionReport> DecodeListing(long objectId, IReadOnlyList<PersistedVersion> listed, out (long Version, string Reason)? discarded)
    {
        var reports = new List<VersionReport>(listed.Count);
        long highest = 0;
        discarded = null;
        foreach (var v in listed)
        {
            if (v.Version <= highest)
            {
                throw new InvalidOperationException($"StateObject {objectId}: ListVersions returned version {v.Version} after {highest}; versions must be positive and ascending.");
            }

            var report = DecodeLayout(v.Version, v.Metadata.Span);
            if (Implausibility(report) is { } reason)
            {
                discarded = (v.Version, reason);
                break;
            }

            reports.Add(report);
            highest = v.Version;
        }

        return reports;
    }

    /// <summary>Why the coordinator would refuse a persisted version's fragment, or null: what a header's parsing refuses now.</summary>
    internal static string? Implausibility(VersionReport report)
    {
        if (report.WorldLine < 0)
        {
            return $"version {report.Version} names world-line {report.WorldLine}";
        }

        var seen = new HashSet<long>();
        foreach (var d in report.Dependencies)
        {
            if (d.ObjectId < 0 || d.Version < 0)
            {
                return $"version {report.Version} depends on version {d.Version} of participant {d.ObjectId}";
            }

            if (!seen.Add(d.ObjectId))
            {
                return $"version {report.Version} lists participant {d.ObjectId} twice";
            }
        }

        return null;
    }
}
