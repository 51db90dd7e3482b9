using System.Reflection;
using System.Runtime.CompilerServices;
using Microsoft.CodeAnalysis;
using Microsoft.CodeAnalysis.CSharp.Syntax;
using Microsoft.CodeAnalysis.Emit;

namespace Dse.Functions.Generators.Tests;

/// <summary>The generated code emitted into an assembly, loaded, and its module initializer run against the real catalog.</summary>
public sealed class EntityProxyGeneratorEndToEndTests
{
    [Fact]
    public void Emit_BankExample_HasOneModuleInitializerThatRegistersAndRuns()
    {
        GeneratorOutput output = TestCompilation.Generate(TestCompilation.Bank);
        Assert.Empty(output.AllProblems);

        // The one module initializer calls the catalog's registration methods for the interface and the class.
        SyntaxTree generated = output.Compilation.SyntaxTrees.Last();
        SemanticModel model = output.Compilation.GetSemanticModel(generated);
        MethodDeclarationSyntax initializer = Assert.Single(
            generated.GetRoot().DescendantNodes().OfType<MethodDeclarationSyntax>(),
            method => method.AttributeLists.SelectMany(static list => list.Attributes).Any(static a => a.Name.ToString().EndsWith("ModuleInitializer", StringComparison.Ordinal)));
        var calls = initializer.DescendantNodes()
            .OfType<InvocationExpressionSyntax>()
            .Select(call => model.GetSymbolInfo(call).Symbol as IMethodSymbol)
            .Where(static method => method?.ContainingType.ToDisplayString() == "Dse.Functions.EntityCatalog")
            .Select(static method => method!.ToDisplayString())
            .ToList();
        Assert.Equal(
            [
                "Dse.Functions.EntityCatalog.RegisterProxy<Bank.IAccount>(System.Func<Dse.Functions.EntityProxyContext, Bank.IAccount>)",
                "Dse.Functions.EntityCatalog.RegisterEntity<Bank.AccountEntity, string, Bank.Account>(string, System.Func<Bank.AccountEntity>, System.Type[], Dse.Functions.EntityMethod[])",
            ],
            calls);

        using var image = new MemoryStream();
        EmitResult emitted = output.Compilation.Emit(image);
        Assert.True(emitted.Success, string.Join("\n", emitted.Diagnostics));
        Assembly assembly = Assembly.Load(image.ToArray());

        MethodInfo loaded = Assert.Single(
            assembly.GetTypes().SelectMany(static type => type.GetMethods(BindingFlags.Static | BindingFlags.Public | BindingFlags.NonPublic | BindingFlags.DeclaredOnly)),
            static method => method.IsDefined(typeof(ModuleInitializerAttribute)));
        Assert.Equal("Register", loaded.Name);
        RuntimeHelpers.RunModuleConstructor(assembly.ManifestModule.ModuleHandle);
    }

    [Fact]
    public async Task Emit_CounterScenario_RunsThroughProxiesAndDispatchersOnSerialRunner()
    {
        // An awaited call, a call with a tuple of arguments, a nested one-way call to an explicit implementation, and a
        // query: every generated path, run by the real runtime's serial runner inside the emitted assembly.
        const string source = """
            using System.Threading.Tasks;
            using Dse.Functions;

            namespace Counting;

            public interface ICounter : IEntity<string>
            {
                Task<long> Get();

                Task Add(long amount);

                Task<long> MoveTo(string other, long amount);

                [OneWay]
                Task Receive(long amount);
            }

            public sealed class CounterEntity : Entity<string, long>, ICounter
            {
                public Task<long> Get() => Task.FromResult(State);

                public Task Add(long amount)
                {
                    State += amount;
                    return Task.CompletedTask;
                }

                public async Task<long> MoveTo(string other, long amount)
                {
                    State -= amount;
                    await Entities.Get<ICounter>(other).Receive(amount);
                    return State;
                }

                Task ICounter.Receive(long amount)
                {
                    State += amount;
                    return Task.CompletedTask;
                }
            }

            public static class Scenario
            {
                public static async Task<long[]> RunAsync()
                {
                    var runner = new SerialEntityRunner(e => e.Add<CounterEntity>());
                    ICounter alice = runner.Client.Get<ICounter>("alice");
                    await alice.Add(10);
                    long left = await alice.MoveTo("bob", 3);
                    long bob = await runner.Client.Get<ICounter>("bob").Get();
                    return new[] { left, bob, runner.GetState<ICounter, long>("alice") };
                }
            }
            """;
        GeneratorOutput output = TestCompilation.Generate(source);
        Assert.Empty(output.AllProblems);
        using var image = new MemoryStream();
        EmitResult emitted = output.Compilation.Emit(image);
        Assert.True(emitted.Success, string.Join("\n", emitted.Diagnostics));
        Assembly assembly = Assembly.Load(image.ToArray());

        MethodInfo run = assembly.GetType("Counting.Scenario", throwOnError: true)!.GetMethod("RunAsync")!;
        long[] results = await (Task<long[]>)run.Invoke(null, null)!;

        Assert.Equal([7L, 3L, 7L], results);
    }
}
