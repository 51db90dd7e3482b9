using System.Collections.Immutable;
using Microsoft.CodeAnalysis;
using Microsoft.CodeAnalysis.CSharp;
using Microsoft.CodeAnalysis.Diagnostics;

namespace Dse.Functions.Generators.Tests;

/// <summary>
/// In-memory compilations of user code against the running framework, Dse.Functions and MemoryPack, with the
/// generator or the analyzer applied.
/// </summary>
internal static class TestCompilation
{
    public static readonly CSharpParseOptions ParseOptions = new(LanguageVersion.Latest);

    private static readonly ImmutableArray<MetadataReference> References = LoadReferences();

    /// <summary>The example of the docs: an account entity with a query, an update, a transfer and a one-way deposit.</summary>
    public const string Bank = """
        using System.Threading.Tasks;
        using Dse.Functions;
        using MemoryPack;

        namespace Bank;

        [MemoryPackable]
        public partial record Account(long Balance);

        public interface IAccount : IEntity<string>
        {
            Task<long> Balance();

            Task Withdraw(long amount);

            Task<long> TransferTo(string creditor, long amount);

            [OneWay]
            Task Deposit(long amount);
        }

        public sealed class AccountEntity : Entity<string, Account>, IAccount
        {
            protected override Account Initial => new(0);

            public Task<long> Balance() => Task.FromResult(State.Balance);

            public Task Withdraw(long amount)
            {
                if (State.Balance < amount)
                {
                    throw new System.InvalidOperationException("insufficient funds");
                }

                State = State with { Balance = State.Balance - amount };
                return Task.CompletedTask;
            }

            public async Task<long> TransferTo(string creditor, long amount)
            {
                await Withdraw(amount);
                await Entities.Get<IAccount>(creditor).Deposit(amount);
                return State.Balance;
            }

            public Task Deposit(long amount)
            {
                State = State with { Balance = State.Balance + amount };
                return Task.CompletedTask;
            }
        }
        """;

    public static CSharpCompilation Create(string assemblyName, params string[] sources) =>
        CSharpCompilation.Create(
            assemblyName,
            sources.Select(static (source, i) => CSharpSyntaxTree.ParseText(source, ParseOptions, path: $"Source{i}.cs")),
            References,
            new CSharpCompilationOptions(
                OutputKind.DynamicallyLinkedLibrary,
                nullableContextOptions: NullableContextOptions.Enable,
                warningLevel: 9999));

    /// <summary>Runs the generator on <paramref name="sources"/>.</summary>
    public static GeneratorOutput Generate(params string[] sources)
    {
        CSharpCompilation input = Create("Entities" + Guid.NewGuid().ToString("N"), sources);
        Assert.Empty(input.GetDiagnostics().Where(static d => d.Severity == DiagnosticSeverity.Error));
        GeneratorDriver driver = CSharpGeneratorDriver.Create([new EntityProxyGenerator().AsSourceGenerator()], parseOptions: ParseOptions);
        driver = driver.RunGeneratorsAndUpdateCompilation(input, out Compilation output, out ImmutableArray<Diagnostic> diagnostics);
        GeneratorRunResult result = Assert.Single(driver.GetRunResult().Results);
        Assert.Null(result.Exception);
        string? text = result.GeneratedSources.Length == 0 ? null : Assert.Single(result.GeneratedSources).SourceText.ToString();
        return new GeneratorOutput((CSharpCompilation)output, diagnostics, text);
    }

    /// <summary>The determinism analyzer's diagnostics on <paramref name="sources"/>, which must compile.</summary>
    public static async Task<ImmutableArray<Diagnostic>> AnalyzeAsync(params string[] sources)
    {
        CSharpCompilation compilation = Create("Analyzed" + Guid.NewGuid().ToString("N"), sources);
        Assert.Empty(compilation.GetDiagnostics().Where(static d => d.Severity == DiagnosticSeverity.Error));
        CompilationWithAnalyzers analyzed = compilation.WithAnalyzers([new DeterminismAnalyzer()]);
        return await analyzed.GetAnalyzerDiagnosticsAsync();
    }

    /// <summary>Diagnostics a build would show: hidden ones (an unused using) left out.</summary>
    public static IEnumerable<Diagnostic> Problems(IEnumerable<Diagnostic> diagnostics) =>
        diagnostics.Where(static d => d.Severity != DiagnosticSeverity.Hidden);

    private static ImmutableArray<MetadataReference> LoadReferences()
    {
        // The framework's own assemblies (the trusted platform list holds test dependencies too), then the runtime
        // the generated code calls and the serializer the example's state uses.
        string framework = Path.GetDirectoryName(typeof(object).Assembly.Location)!;
        var paths = ((string)AppContext.GetData("TRUSTED_PLATFORM_ASSEMBLIES")!)
            .Split(Path.PathSeparator)
            .Where(path => string.Equals(Path.GetDirectoryName(path), framework, StringComparison.Ordinal))
            .ToList();
        paths.Add(typeof(EntityProxy).Assembly.Location);
        paths.Add(typeof(MemoryPack.MemoryPackableAttribute).Assembly.Location);
        return [.. paths.Select(static path => MetadataReference.CreateFromFile(path))];
    }
}

/// <summary>What one generator run produced.</summary>
/// <param name="Compilation">The input with the generated file added.</param>
/// <param name="Diagnostics">The generator's diagnostics.</param>
/// <param name="Text">The generated file, or null when none was added.</param>
internal sealed record GeneratorOutput(CSharpCompilation Compilation, ImmutableArray<Diagnostic> Diagnostics, string? Text)
{
    /// <summary>The generated file; fails the test when there is none.</summary>
    public string Source => Text ?? throw new Xunit.Sdk.XunitException("The generator added no file.");

    /// <summary>Every warning and error of the compilation with the generated file, and the generator's own.</summary>
    public IReadOnlyList<Diagnostic> AllProblems =>
        [.. TestCompilation.Problems(Diagnostics), .. TestCompilation.Problems(Compilation.GetDiagnostics())];
}
