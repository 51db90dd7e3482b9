using System.Buffers.Binary;

namespace Dse;

/// <summary>
/// The DSE header a message carries: the vertex it came from (an action of a StateObject) or the dependency set of the
/// sthread that sent it, tagged with the sender's world-line. Binary layout: <c>docs/header-format.md</c>.
/// </summary>
/// <remarks>An origin header is allocation-free; a dependency-set header references its dependency array.</remarks>
public readonly struct DseHeader : IEquatable<DseHeader>
{
    /// <summary>First byte of every encoded header.</summary>
    public const byte Magic = 0xD5;

    /// <summary>The format version this build writes and reads.</summary>
    public const byte FormatVersion = 1;

    /// <summary>Size of the fixed prefix shared by both kinds (magic, format, kind, flags, world-line).</summary>
    public const int PrefixLength = 12;

    /// <summary>Encoded size of an origin header.</summary>
    public const int OriginLength = PrefixLength + 16;

    /// <summary>Largest dependency set a header may carry; bounds what a peer can make us allocate.</summary>
    public const int MaxDependencies = 65_536;

    private readonly Dependency[]? _dependencies;
    private readonly long _objectId;
    private readonly long _version;

    private DseHeader(DseHeaderKind kind, long worldLine, long objectId, long version, Dependency[]? dependencies)
    {
        Kind = kind;
        WorldLine = worldLine;
        _objectId = objectId;
        _version = version;
        _dependencies = dependencies;
    }

    /// <summary>What the header carries; <see cref="DseHeaderKind.None"/> for <c>default</c>.</summary>
    public DseHeaderKind Kind { get; }

    /// <summary>The sender's world-line when it produced the message.</summary>
    public long WorldLine { get; }

    /// <summary>The origin vertex; only meaningful when <see cref="Kind"/> is <see cref="DseHeaderKind.Origin"/>.</summary>
    public Vertex Origin => new(_objectId, WorldLine, _version);

    /// <summary>The dependencies the header carries: the origin vertex, or the sthread's set.</summary>
    public ReadOnlySpan<Dependency> Dependencies => Kind switch
    {
        DseHeaderKind.DependencySet => _dependencies,
        _ => ReadOnlySpan<Dependency>.Empty,
    };

    /// <summary>The number of dependencies (1 for an origin header).</summary>
    public int DependencyCount => Kind switch
    {
        DseHeaderKind.Origin => 1,
        DseHeaderKind.DependencySet => _dependencies!.Length,
        _ => 0,
    };

    /// <summary>Bytes <see cref="WriteTo"/> writes.</summary>
    public int EncodedLength => Kind switch
    {
        DseHeaderKind.Origin => OriginLength,
        DseHeaderKind.DependencySet => PrefixLength + 4 + (16 * _dependencies!.Length),
        _ => throw new InvalidOperationException("An empty DseHeader has no encoding."),
    };

    /// <summary>Gets the i-th dependency (the origin, for an origin header).</summary>
    public Dependency GetDependency(int index) => Kind switch
    {
        DseHeaderKind.Origin when index == 0 => new Dependency(_objectId, _version),
        DseHeaderKind.DependencySet => _dependencies![index],
        _ => throw new ArgumentOutOfRangeException(nameof(index)),
    };

    /// <summary>The highest version among the dependencies, 0 for none: what commit ordering makes the receiver reach.</summary>
    internal long MaxDependencyVersion()
    {
        long max = 0;
        for (int i = 0; i < DependencyCount; i++)
        {
            max = Math.Max(max, GetDependency(i).Version);
        }

        return max;
    }

    /// <summary>Creates the header of a message sent by an action of a StateObject.</summary>
    public static DseHeader FromOrigin(long objectId, long worldLine, long version)
    {
        ArgumentOutOfRangeException.ThrowIfNegative(worldLine);
        ArgumentOutOfRangeException.ThrowIfNegative(version);
        return new DseHeader(DseHeaderKind.Origin, worldLine, objectId, version, null);
    }

    /// <summary>Creates the header of a message sent by an sthread; the array is referenced, not copied.</summary>
    public static DseHeader FromDependencies(long worldLine, Dependency[] dependencies)
    {
        ArgumentNullException.ThrowIfNull(dependencies);
        ArgumentOutOfRangeException.ThrowIfNegative(worldLine);
        if (dependencies.Length > MaxDependencies)
        {
            throw new ArgumentException($"An sthread header holds at most {MaxDependencies} dependencies, not {dependencies.Length}.", nameof(dependencies));
        }

        return new DseHeader(DseHeaderKind.DependencySet, worldLine, 0, 0, dependencies);
    }

    /// <summary>Writes the header and returns the bytes written.</summary>
    /// <exception cref="ArgumentException">The destination is shorter than <see cref="EncodedLength"/>.</exception>
    public int WriteTo(Span<byte> destination)
    {
        int length = EncodedLength;
        if (destination.Length < length)
        {
            throw new ArgumentException($"A DSE header needs {length} bytes; the destination has {destination.Length}.", nameof(destination));
        }

        destination[0] = Magic;
        destination[1] = FormatVersion;
        destination[2] = (byte)Kind;
        destination[3] = 0;
        BinaryPrimitives.WriteInt64LittleEndian(destination[4..], WorldLine);
        if (Kind == DseHeaderKind.Origin)
        {
            BinaryPrimitives.WriteInt64LittleEndian(destination[12..], _objectId);
            BinaryPrimitives.WriteInt64LittleEndian(destination[20..], _version);
            return length;
        }

        var deps = _dependencies!;
        BinaryPrimitives.WriteUInt32LittleEndian(destination[12..], (uint)deps.Length);
        int offset = PrefixLength + 4;
        for (int i = 0; i < deps.Length; i++)
        {
            BinaryPrimitives.WriteInt64LittleEndian(destination[offset..], deps[i].ObjectId);
            BinaryPrimitives.WriteInt64LittleEndian(destination[(offset + 8)..], deps[i].Version);
            offset += 16;
        }

        return length;
    }

    /// <summary>Encodes the header into a new array.</summary>
    public byte[] ToArray()
    {
        var bytes = new byte[EncodedLength];
        WriteTo(bytes);
        return bytes;
    }

    /// <summary>Decodes a header.</summary>
    /// <exception cref="DseHeaderFormatException">The bytes are not a complete, well-formed header; the message names why.</exception>
    public static DseHeader Parse(ReadOnlySpan<byte> source)
    {
        if (!TryParse(source, out var header, out var error))
        {
            throw new DseHeaderFormatException(error);
        }

        return header;
    }

    /// <summary>Decodes a header, reporting what was wrong instead of throwing.</summary>
    public static bool TryParse(ReadOnlySpan<byte> source, out DseHeader header, out string error)
    {
        // Fast path for the common, well-formed origin header; everything else (and every error message) is in the cold path.
        if (source.Length == OriginLength
            && BinaryPrimitives.ReadUInt32LittleEndian(source) == (Magic | (FormatVersion << 8) | ((uint)DseHeaderKind.Origin << 16)))
        {
            long worldLine = BinaryPrimitives.ReadInt64LittleEndian(source[4..]);
            long objectId = BinaryPrimitives.ReadInt64LittleEndian(source[12..]);
            long version = BinaryPrimitives.ReadInt64LittleEndian(source[20..]);
            if ((worldLine | objectId | version) >= 0)
            {
                header = new DseHeader(DseHeaderKind.Origin, worldLine, objectId, version, null);
                error = string.Empty;
                return true;
            }
        }

        return TryParseSlow(source, out header, out error);
    }

    [System.Runtime.CompilerServices.MethodImpl(System.Runtime.CompilerServices.MethodImplOptions.NoInlining)]
    private static bool TryParseSlow(ReadOnlySpan<byte> source, out DseHeader header, out string error)
    {
        header = default;
        if (source.Length < PrefixLength)
        {
            error = $"DSE header truncated: {source.Length} bytes, at least {PrefixLength} needed.";
            return false;
        }

        if (source[0] != Magic)
        {
            error = $"Not a DSE header: first byte is 0x{source[0]:X2}, expected 0x{Magic:X2}.";
            return false;
        }

        if (source[1] != FormatVersion)
        {
            error = $"Unsupported DSE header format version {source[1]}; this build reads version {FormatVersion}.";
            return false;
        }

        if (source[3] != 0)
        {
            error = $"DSE header has unknown flags 0x{source[3]:X2}.";
            return false;
        }

        long worldLine = BinaryPrimitives.ReadInt64LittleEndian(source[4..]);
        if (worldLine < 0)
        {
            error = $"DSE header has a negative world-line ({worldLine}).";
            return false;
        }

        switch ((DseHeaderKind)source[2])
        {
            case DseHeaderKind.Origin:
                if (source.Length != OriginLength)
                {
                    error = $"DSE origin header must be {OriginLength} bytes, got {source.Length}.";
                    return false;
                }

                long objectId = BinaryPrimitives.ReadInt64LittleEndian(source[12..]);
                if (objectId < 0)
                {
                    error = $"DSE header names a negative participant id ({objectId}).";
                    return false;
                }

                long version = BinaryPrimitives.ReadInt64LittleEndian(source[20..]);
                if (version < 0)
                {
                    error = $"DSE header has a negative version ({version}).";
                    return false;
                }

                header = new DseHeader(DseHeaderKind.Origin, worldLine, objectId, version, null);
                error = string.Empty;
                return true;

            case DseHeaderKind.DependencySet:
                if (source.Length < PrefixLength + 4)
                {
                    error = $"DSE dependency header truncated: {source.Length} bytes, at least {PrefixLength + 4} needed.";
                    return false;
                }

                uint count = BinaryPrimitives.ReadUInt32LittleEndian(source[12..]);
                if (count > MaxDependencies)
                {
                    error = $"DSE dependency header claims {count} dependencies; the limit is {MaxDependencies}.";
                    return false;
                }

                long expected = PrefixLength + 4 + (16L * count);
                if (source.Length != expected)
                {
                    error = $"DSE dependency header with {count} dependencies must be {expected} bytes, got {source.Length}.";
                    return false;
                }

                var deps = count == 0 ? [] : new Dependency[count];
                int offset = PrefixLength + 4;
                for (int i = 0; i < deps.Length; i++)
                {
                    long id = BinaryPrimitives.ReadInt64LittleEndian(source[offset..]);
                    long v = BinaryPrimitives.ReadInt64LittleEndian(source[(offset + 8)..]);
                    if (id < 0)
                    {
                        error = $"DSE dependency header entry {i} names a negative participant id ({id}).";
                        return false;
                    }

                    if (v < 0)
                    {
                        error = $"DSE dependency header entry {i} has a negative version ({v}).";
                        return false;
                    }

                    deps[i] = new Dependency(id, v);
                    offset += 16;
                }

                header = new DseHeader(DseHeaderKind.DependencySet, worldLine, 0, 0, deps);
                error = string.Empty;
                return true;

            default:
                error = $"DSE header has unknown kind {source[2]}.";
                return false;
        }
    }

    /// <inheritdoc />
    public bool Equals(DseHeader other)
    {
        if (Kind != other.Kind || WorldLine != other.WorldLine)
        {
            return false;
        }

        return Kind != DseHeaderKind.DependencySet
            ? _objectId == other._objectId && _version == other._version
            : Dependencies.SequenceEqual(other.Dependencies);
    }

    /// <inheritdoc />
    public override bool Equals(object? obj) => obj is DseHeader other && Equals(other);

    /// <inheritdoc />
    public override int GetHashCode() => HashCode.Combine(Kind, WorldLine, _objectId, _version, DependencyCount);

    /// <inheritdoc />
    public override string ToString() => Kind switch
    {
        DseHeaderKind.Origin => $"DseHeader(origin {_objectId}@{_version}, world-line {WorldLine})",
        DseHeaderKind.DependencySet => $"DseHeader({_dependencies!.Length} dependencies, world-line {WorldLine})",
        _ => "DseHeader(none)",
    };

    /// <summary>Equality.</summary>
    public static bool operator ==(DseHeader left, DseHeader right) => left.Equals(right);

    /// <summary>Inequality.</summary>
    public static bool operator !=(DseHeader left, DseHeader right) => !left.Equals(right);
}
