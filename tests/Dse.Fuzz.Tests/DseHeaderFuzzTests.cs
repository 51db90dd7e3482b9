using CsCheck;
using Xunit.Abstractions;

namespace Dse.Fuzz.Tests;

/// <summary>
/// The DSE header and version metadata codecs (docs/header-format.md) on random and mutated bytes: a reader accepts
/// exactly the encodings it would write and refuses everything else with a <see cref="DseHeaderFormatException"/> naming
/// what was wrong.
/// </summary>
[Trait("Category", "Fuzz")]
public sealed class DseHeaderFuzzTests(ITestOutputHelper output)
{
    private static readonly Gen<Dependency> Dependency = Gen.Select(Gen.Long, Gen.Long[0, long.MaxValue], (id, version) => new Dependency(id, version));

    private static readonly Gen<byte[]> ValidHeader = Gen.OneOf(
        Gen.Select(Gen.Long, Gen.Long[0, long.MaxValue], Gen.Long[0, long.MaxValue], (id, worldLine, version) => DseHeader.FromOrigin(id, worldLine, version).ToArray()),
        Gen.Select(Gen.Long[0, long.MaxValue], Dependency.Array[0, 6], (worldLine, deps) => DseHeader.FromDependencies(worldLine, deps).ToArray()));

    private static readonly Gen<byte[]> ValidMetadata =
        Gen.Select(Gen.Long[0, long.MaxValue], Dependency.Array[0, 6], (worldLine, deps) => VersionMetadata.Encode(worldLine, deps));

    [Fact]
    public void Parse_MutatedBytes_RoundTripsOrRefusesWithFormatException()
    {
        CodecCheck.Sample($"{nameof(DseHeaderFuzzTests)}.{nameof(Parse_MutatedBytes_RoundTripsOrRefusesWithFormatException)}", output, CodecCheck.Inputs(ValidHeader), bytes =>
        {
            bool parsed = DseHeader.TryParse(bytes, out var header, out string error);
            if (parsed)
            {
                // Accepted: the bytes are the header's own encoding, and Parse agrees.
                Assert.Equal(string.Empty, error);
                Assert.Equal(bytes, header.ToArray());
                Assert.Equal(header, DseHeader.Parse(bytes));
                Assert.True(header.WorldLine >= 0);
                for (int i = 0; i < header.DependencyCount; i++)
                {
                    Assert.True(header.GetDependency(i).Version >= 0);
                }
            }
            else
            {
                // Refused: Parse throws the documented exception with the same, non-empty reason.
                Assert.False(string.IsNullOrWhiteSpace(error));
                var thrown = Assert.Throws<DseHeaderFormatException>(() => DseHeader.Parse(bytes));
                Assert.Equal(error, thrown.Message);
            }
        }, defaultInputs: 20_000);
    }

    [Fact]
    public void VersionMetadataDecode_MutatedBytes_RoundTripsOrRefusesWithFormatException()
    {
        CodecCheck.Sample($"{nameof(DseHeaderFuzzTests)}.{nameof(VersionMetadataDecode_MutatedBytes_RoundTripsOrRefusesWithFormatException)}", output, CodecCheck.Inputs(ValidMetadata), bytes =>
        {
            VersionReport report;
            try
            {
                report = VersionMetadata.Decode(7, bytes);
            }
            catch (DseHeaderFormatException e)
            {
                Assert.False(string.IsNullOrWhiteSpace(e.Message));
                return;
            }

            // Accepted: every value is one docs/header-format.md allows, and the fields encode back to the same bytes.
            Assert.Equal(7, report.Version);
            Assert.True(report.WorldLine >= 0, $"accepted world-line {report.WorldLine}");
            Assert.All(report.Dependencies, d => Assert.True(d.ObjectId >= 0 && d.Version >= 0, $"accepted dependency {d}"));
            Assert.Equal(report.Dependencies.Count, report.Dependencies.Select(d => d.ObjectId).Distinct().Count());
            Assert.Equal(bytes, VersionMetadata.Encode(report.WorldLine, report.Dependencies));
        }, defaultInputs: 20_000);
    }
}
