using System.Collections.Immutable;
using Microsoft.CodeAnalysis;
using Microsoft.CodeAnalysis.Diagnostics;

namespace Dse.Functions.Generators;

/// <summary>
/// Flags, inside classes deriving from <c>Dse.Functions.Entity&lt;TKey, TState&gt;</c> (at any depth), what makes a
/// transaction differ when it runs again: clock reads, unseeded randomness, new GUIDs, background work and delays,
/// <c>ConfigureAwait(false)</c> and I/O (DSEF001 to DSEF006). Each message names the replay-safe replacement.
/// </summary>
[DiagnosticAnalyzer(LanguageNames.CSharp)]
public sealed class DeterminismAnalyzer : DiagnosticAnalyzer
{
    /// <inheritdoc/>
    public override ImmutableArray<DiagnosticDescriptor> SupportedDiagnostics => DeterminismDiagnostics.All;

    /// <inheritdoc/>
    public override void Initialize(AnalysisContext context)
    {
        context.ConfigureGeneratedCodeAnalysis(GeneratedCodeAnalysisFlags.None);
        context.EnableConcurrentExecution();
        context.RegisterCompilationStartAction(static start =>
        {
            if (start.Compilation.GetTypeByMetadataName("Dse.Functions.Entity`2") is null)
            {
                return;
            }

            var rules = new DeterminismRules(start.Compilation);
            start.RegisterSymbolStartAction(
                symbolStart =>
                {
                    if (symbolStart.Symbol is INamedTypeSymbol { TypeKind: TypeKind.Class } type && EntitySymbols.EntityBaseOf(type) is not null)
                    {
                        symbolStart.RegisterOperationAction(
                            rules.Analyze,
                            OperationKind.Invocation,
                            OperationKind.PropertyReference,
                            OperationKind.MethodReference,
                            OperationKind.ObjectCreation);
                    }
                },
                SymbolKind.NamedType);
        });
    }
}
