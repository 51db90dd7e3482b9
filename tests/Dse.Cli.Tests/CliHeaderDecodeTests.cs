namespace Dse.Cli.Tests;

/// <summary><c>dse header decode</c> on headers LibDse encoded, and on bytes that are not one.</summary>
public class CliHeaderDecodeTests
{
    [Fact]
    public async Task HeaderDecode_OriginHeader_PrintsItsFields()
    {
        string encoded = Convert.ToBase64String(DseHeader.FromOrigin(objectId: 7, worldLine: 2, version: 41).ToArray());

        var json = await DseTool.JsonAsync("header", "decode", encoded);
        var text = await DseTool.RunAsync("header", "decode", encoded);

        Assert.Equal("Origin", (string?)json["kind"]);
        Assert.Equal(2, (long?)json["worldLine"]);
        Assert.Equal(7, (long?)json["objectId"]);
        Assert.Equal(41, (long?)json["version"]);
        Assert.Equal(0, text.ExitCode);
        Assert.Contains("object      7", text.OutputLines);
    }

    [Fact]
    public async Task HeaderDecode_DependencySetUrlSafeUnpadded_ListsEveryDependency()
    {
        byte[] bytes = DseHeader.FromDependencies(worldLine: 1, [new Dependency(3, 10), new Dependency(900, 2)]).ToArray();
        string urlSafe = Convert.ToBase64String(bytes).TrimEnd('=').Replace('+', '-').Replace('/', '_');

        var json = await DseTool.JsonAsync("header", "decode", urlSafe);

        Assert.Equal("DependencySet", (string?)json["kind"]);
        var dependencies = json["dependencies"]!.AsArray();
        Assert.Equal(2, dependencies.Count);
        Assert.Equal(900, (long?)dependencies[1]!["objectId"]);
        Assert.Equal(2, (long?)dependencies[1]!["version"]);
    }

    [Fact]
    public async Task HeaderDecode_GarbageBase64_IsAUsageErrorOnOneLine()
    {
        var run = await DseTool.RunAsync("header", "decode", "not*base64!", "--json");

        string line = DseTool.AssertOneLineError(run, 2);
        Assert.Contains("is not base64", line, StringComparison.Ordinal);
    }

    [Fact]
    public async Task HeaderDecode_BytesThatAreNoHeader_FailOnOneLineNamingWhy()
    {
        byte[] bytes = DseHeader.FromOrigin(1, 0, 1).ToArray();
        bytes[0] = 0x00;

        var run = await DseTool.RunAsync("header", "decode", Convert.ToBase64String(bytes));

        string line = DseTool.AssertOneLineError(run, 1);
        Assert.Contains("not a DSE header", line, StringComparison.Ordinal);
    }

    [Fact]
    public async Task Dse_UnknownCommandOrOption_IsAUsageError()
    {
        DseTool.AssertOneLineError(await DseTool.RunAsync("frobnicate"), 2);
        DseTool.AssertOneLineError(await DseTool.RunAsync("header", "decode", "AAAA", "--verbose"), 2);
    }
}
