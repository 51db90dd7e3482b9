namespace Dse.Tests;

public class VersionMetadataTests
{
    [Fact]
    public void Decode_RoundTrip_ReturnsWorldLineAndDependencies()
    {
        var bytes = VersionMetadata.Encode(3, [new(2, 7), new(5, 1)]);

        var report = VersionMetadata.Decode(9, bytes);

        Assert.Equal(9, report.Version);
        Assert.Equal(3, report.WorldLine);
        Assert.Equal([new Dependency(2, 7), new Dependency(5, 1)], report.Dependencies);
    }

    [Theory]
    [InlineData(0)]
    [InlineData(15)]
    [InlineData(31)]
    public void Decode_Truncated_ThrowsNamingVersion(int length)
    {
        var bytes = VersionMetadata.Encode(1, [new(2, 7)]);
        var ex = Assert.Throws<DseHeaderFormatException>(() => VersionMetadata.Decode(4, bytes.AsSpan(0, length)));
        Assert.Contains("version 4", ex.Message, StringComparison.Ordinal);
    }

    [Fact]
    public void Decode_WrongMagic_Throws()
    {
        var bytes = VersionMetadata.Encode(1, []);
        bytes[0] = 0x11;
        Assert.Throws<DseHeaderFormatException>(() => VersionMetadata.Decode(1, bytes));
    }

    [Fact]
    public void Decode_UnknownFormat_Throws()
    {
        var bytes = VersionMetadata.Encode(1, []);
        bytes[1] = 2;
        var ex = Assert.Throws<DseHeaderFormatException>(() => VersionMetadata.Decode(1, bytes));
        Assert.Contains("format version 2", ex.Message, StringComparison.Ordinal);
    }

    [Fact]
    public void Decode_ReservedBytesSet_Throws()
    {
        var bytes = VersionMetadata.Encode(1, []);
        bytes[2] = 1;
        var ex = Assert.Throws<DseHeaderFormatException>(() => VersionMetadata.Decode(1, bytes));
        Assert.Contains("reserved", ex.Message, StringComparison.Ordinal);
    }

    [Theory]
    [InlineData(-1, 2, 7)]
    [InlineData(0, -5, 7)]
    [InlineData(0, 2, -1)]
    public void Decode_NegativeValues_Throw(long worldLine, long objectId, long version)
    {
        var bytes = VersionMetadata.Encode(worldLine, [new(objectId, version)]);
        Assert.Throws<DseHeaderFormatException>(() => VersionMetadata.Decode(1, bytes));
    }

    [Fact]
    public void Decode_ParticipantListedTwice_Throws()
    {
        var bytes = VersionMetadata.Encode(0, [new(2, 7), new(2, 8)]);
        var ex = Assert.Throws<DseHeaderFormatException>(() => VersionMetadata.Decode(1, bytes));
        Assert.Contains("twice", ex.Message, StringComparison.Ordinal);
    }
}
