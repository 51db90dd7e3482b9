using System.Buffers.Binary;

namespace Dse.Tests;

public class DseHeaderTests
{
    [Fact]
    public void Parse_OriginRoundTrip_ReturnsSameVertex()
    {
        var header = DseHeader.FromOrigin(42, 3, 17);
        var bytes = header.ToArray();

        Assert.Equal(DseHeader.OriginLength, bytes.Length);
        var parsed = DseHeader.Parse(bytes);
        Assert.Equal(header, parsed);
        Assert.Equal(new Vertex(42, 3, 17), parsed.Origin);
        Assert.Equal(new Dependency(42, 17), parsed.GetDependency(0));
    }

    [Fact]
    public void Parse_DependencySetRoundTrip_ReturnsSameSet()
    {
        Dependency[] deps = [new(1, 5), new(2, 9), new(7, 1)];
        var header = DseHeader.FromDependencies(4, deps);

        var parsed = DseHeader.Parse(header.ToArray());

        Assert.Equal(DseHeaderKind.DependencySet, parsed.Kind);
        Assert.Equal(4, parsed.WorldLine);
        Assert.Equal(deps, parsed.Dependencies.ToArray());
        Assert.Equal(header, parsed);
    }

    [Fact]
    public void Parse_EmptyDependencySet_RoundTrips()
    {
        var parsed = DseHeader.Parse(DseHeader.FromDependencies(0, []).ToArray());
        Assert.Equal(0, parsed.DependencyCount);
    }

    [Fact]
    public void WriteTo_ShortDestination_ThrowsNamingSizes()
    {
        var ex = Assert.Throws<ArgumentException>(() => DseHeader.FromOrigin(1, 0, 1).WriteTo(new byte[10]));
        Assert.Contains("28", ex.Message, StringComparison.Ordinal);
    }

    public static TheoryData<string, byte[], string> Malformed()
    {
        var origin = DseHeader.FromOrigin(1, 2, 3).ToArray();
        var set = DseHeader.FromDependencies(1, [new(1, 1), new(2, 2)]).ToArray();
        return new TheoryData<string, byte[], string>
        {
            { "empty", [], "truncated" },
            { "prefix only", origin[..11], "truncated" },
            { "origin truncated", origin[..27], "must be 28 bytes" },
            { "origin with trailing byte", [.. origin, 0], "must be 28 bytes" },
            { "wrong magic", With(origin, 0, 0x00), "Not a DSE header" },
            { "future format", With(origin, 1, 9), "Unsupported DSE header format version 9" },
            { "unknown kind", With(origin, 2, 7), "unknown kind 7" },
            { "flags set", With(origin, 3, 1), "unknown flags" },
            { "negative world-line", WithLong(origin, 4, -1), "negative world-line" },
            { "negative version", WithLong(origin, 20, -5), "negative version" },
            { "set truncated in count", set[..14], "truncated" },
            { "set missing an entry", set[..^16], "must be 48 bytes" },
            { "set count too large", WithUInt(set, 12, 1_000_000), "limit is 65536" },
            { "set negative version", WithLong(set, 24, -2), "entry 0 has a negative version" },
        };
    }

    [Theory]
    [MemberData(nameof(Malformed))]
    public void Parse_MalformedBytes_ThrowsClearFormatException(string caseName, byte[] bytes, string expected)
    {
        var ex = Assert.Throws<DseHeaderFormatException>(() => DseHeader.Parse(bytes));
        Assert.True(ex.Message.Contains(expected, StringComparison.Ordinal), $"{caseName}: '{ex.Message}' should mention '{expected}'");
        Assert.False(DseHeader.TryParse(bytes, out _, out var error));
        Assert.Equal(ex.Message, error);
    }

    [Fact]
    public void FromDependencies_TooMany_Throws()
    {
        Assert.Throws<ArgumentException>(() => DseHeader.FromDependencies(0, new Dependency[DseHeader.MaxDependencies + 1]));
    }

    [Fact]
    public void Default_IsNone_AndHasNoEncoding()
    {
        DseHeader none = default;
        Assert.Equal(DseHeaderKind.None, none.Kind);
        Assert.Equal(0, none.DependencyCount);
        Assert.Throws<InvalidOperationException>(() => none.ToArray());
    }

    private static byte[] With(byte[] source, int index, byte value)
    {
        var copy = source.ToArray();
        copy[index] = value;
        return copy;
    }

    private static byte[] WithLong(byte[] source, int index, long value)
    {
        var copy = source.ToArray();
        BinaryPrimitives.WriteInt64LittleEndian(copy.AsSpan(index), value);
        return copy;
    }

    private static byte[] WithUInt(byte[] source, int index, uint value)
    {
        var copy = source.ToArray();
        BinaryPrimitives.WriteUInt32LittleEndian(copy.AsSpan(index), value);
        return copy;
    }
}
