using Microsoft.CodeAnalysis;

namespace Dse.Functions.Generators.Tests;

/// <summary>Each DSEF0xx warning fires inside an entity class, at any depth of derivation, and never in a plain class.</summary>
public sealed class DeterminismAnalyzerTests
{
    public static TheoryData<string, string> Nondeterministic => new()
    {
        { "DSEF001", "var now = DateTime.Now;" },
        { "DSEF001", "var now = DateTime.UtcNow;" },
        { "DSEF001", "var today = DateTime.Today;" },
        { "DSEF001", "var now = DateTimeOffset.UtcNow;" },
        { "DSEF001", "var now = DateTimeOffset.Now;" },
        { "DSEF001", "var ticks = Environment.TickCount;" },
        { "DSEF001", "var ticks = Environment.TickCount64;" },
        { "DSEF001", "var watch = Stopwatch.StartNew();" },
        { "DSEF001", "var watch = new Stopwatch();" },
        { "DSEF001", "var stamp = Stopwatch.GetTimestamp();" },
        { "DSEF001", "var now = TimeProvider.System.GetUtcNow();" },
        { "DSEF002", "var random = new Random();" },
        { "DSEF002", "var random = new Random(42);" },
        { "DSEF002", "var n = Random.Shared.Next();" },
        { "DSEF003", "var id = Guid.NewGuid();" },
        { "DSEF003", "Func<Guid> make = Guid.NewGuid;" },
        { "DSEF004", "await Task.Run(() => { });" },
        { "DSEF004", "await Task.Factory.StartNew(() => { });" },
        { "DSEF004", "await Task.Delay(1);" },
        { "DSEF004", "await Task.Yield();" },
        { "DSEF004", "Thread.Sleep(1);" },
        { "DSEF004", "var thread = new Thread(() => { });" },
        { "DSEF004", "ThreadPool.QueueUserWorkItem(_ => { });" },
        { "DSEF004", "using var timer = new Timer(_ => { }, null, 0, 0);" },
        { "DSEF004", "using var timer = new System.Timers.Timer();" },
        { "DSEF004", "using var timer = new PeriodicTimer(TimeSpan.FromSeconds(1));" },
        { "DSEF004", "Parallel.For(0, 2, _ => { });" },
        { "DSEF005", "await Task.CompletedTask.ConfigureAwait(false);" },
        { "DSEF005", "await Task.FromResult(1).ConfigureAwait(false);" },
        { "DSEF006", "var text = File.ReadAllText(\"a.txt\");" },
        { "DSEF006", "var exists = Directory.Exists(\"a\");" },
        { "DSEF006", "using var stream = new FileStream(\"a.txt\", FileMode.Open);" },
        { "DSEF006", "using var reader = new StreamReader(\"a.txt\");" },
        { "DSEF006", "using var client = new HttpClient();" },
        { "DSEF006", "using var socket = new Socket(SocketType.Stream, ProtocolType.Tcp);" },
        { "DSEF006", "Console.WriteLine(\"hello\");" },
    };

    public static TheoryData<string> Deterministic => new()
    {
        "var now = Context.UtcNow;",
        "var n = Context.Random.Next();",
        "var id = Context.NewGuid();",
        "using var stream = new MemoryStream();",
        "using var reader = new StreamReader(new MemoryStream());",
        "var name = nameof(DateTime.Now);",
        "var later = new DateTime(2000, 1, 1).AddDays(1);",
        "await Task.CompletedTask;",
        "await Task.CompletedTask.ConfigureAwait(true);",
        "var done = Task.FromResult(1);",
    };

    [Theory]
    [MemberData(nameof(Nondeterministic))]
    public async Task Analyze_InEntityMethod_Warns(string id, string statement)
    {
        var diagnostics = await TestCompilation.AnalyzeAsync(InEntity(statement));

        Diagnostic diagnostic = Assert.Single(diagnostics);
        Assert.Equal(id, diagnostic.Id);
        Assert.Equal(DiagnosticSeverity.Warning, diagnostic.Severity);
        Assert.Equal("Statement.cs", diagnostic.Location.GetMappedLineSpan().Path);
    }

    [Theory]
    [MemberData(nameof(Nondeterministic))]
    public async Task Analyze_InPlainClass_IsQuiet(string id, string statement)
    {
        _ = id;
        var diagnostics = await TestCompilation.AnalyzeAsync(InPlainClass(statement));

        Assert.Empty(diagnostics);
    }

    [Theory]
    [MemberData(nameof(Deterministic))]
    public async Task Analyze_ReplaySafeCodeInEntity_IsQuiet(string statement)
    {
        var diagnostics = await TestCompilation.AnalyzeAsync(InEntity(statement));

        Assert.Empty(diagnostics);
    }

    [Fact]
    public async Task Analyze_EntityDerivedThroughAbstractBaseAndInLambda_Warns()
    {
        const string source = Usings + """
            public abstract class Audited<TState> : Entity<string, TState>;

            public sealed class Ledger : Audited<int>
            {
                public Task<DateTime> Stamp()
                {
                    Func<DateTime> clock = () => DateTime.UtcNow;
                    return Task.FromResult(clock());
                }
            }
            """;

        var diagnostics = await TestCompilation.AnalyzeAsync(source);

        Diagnostic diagnostic = Assert.Single(diagnostics);
        Assert.Equal("DSEF001", diagnostic.Id);
        Assert.Contains("Context.UtcNow", diagnostic.GetMessage(System.Globalization.CultureInfo.InvariantCulture), StringComparison.Ordinal);
    }

    [Fact]
    public void SupportedDiagnostics_OneIdPerCategory_AllWarnings()
    {
        var supported = new DeterminismAnalyzer().SupportedDiagnostics;

        Assert.Equal(["DSEF001", "DSEF002", "DSEF003", "DSEF004", "DSEF005", "DSEF006"], supported.Select(static d => d.Id));
        Assert.All(supported, static d => Assert.Equal(DiagnosticSeverity.Warning, d.DefaultSeverity));
    }

    private const string Usings = """
        using System;
        using System.Diagnostics;
        using System.IO;
        using System.Net.Http;
        using System.Net.Sockets;
        using System.Threading;
        using System.Threading.Tasks;
        using Dse.Functions;

        namespace Analyzed;

        """;

    private static string InEntity(string statement) => Usings + $$"""
        public sealed class Worker : Entity<string, int>
        {
            public async Task Work()
            {
        #line 1 "Statement.cs"
                {{statement}}
        #line default
                await Task.CompletedTask;
            }
        }
        """;

    private static string InPlainClass(string statement) => Usings + $$"""
        public sealed class Worker
        {
            public async Task Work()
            {
                {{statement}}
                await Task.CompletedTask;
            }
        }
        """;
}
