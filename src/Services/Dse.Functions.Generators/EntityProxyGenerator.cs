using Microsoft.CodeAnalysis;
using Microsoft.CodeAnalysis.CSharp.Syntax;

namespace Dse.Functions.Generators;

/// <summary>
/// Writes, for the compilation being built, a proxy for every entity interface (an interface deriving from
/// <c>Dse.Functions.IEntity&lt;TKey&gt;</c>) and a dispatcher registration for every concrete entity class (a class
/// deriving from <c>Dse.Functions.Entity&lt;TKey, TState&gt;</c>), all registered with <c>EntityCatalog</c> from one
/// module initializer. Entity interfaces and classes the generated code could not call are reported as DSEF1xx errors.
/// </summary>
[Generator(LanguageNames.CSharp)]
public sealed class EntityProxyGenerator : IIncrementalGenerator
{
    /// <summary>The name of the one file the generator adds.</summary>
    public const string FileName = "Dse.Functions.Entities.g.cs";

    /// <inheritdoc/>
    public void Initialize(IncrementalGeneratorInitializationContext context)
    {
        IncrementalValuesProvider<EntityInterfaceModel> interfaces = context.SyntaxProvider
            .CreateSyntaxProvider(
                static (node, _) => node is InterfaceDeclarationSyntax { BaseList: not null },
                static (syntax, cancellationToken) =>
                    syntax.SemanticModel.GetDeclaredSymbol(syntax.Node, cancellationToken) is INamedTypeSymbol type
                        ? EntityModelReader.ReadInterface(type)
                        : null)
            .Where(static model => model is not null)!;

        IncrementalValuesProvider<EntityClassModel> classes = context.SyntaxProvider
            .CreateSyntaxProvider(
                static (node, _) => node is ClassDeclarationSyntax { BaseList: not null },
                static (syntax, cancellationToken) =>
                    syntax.SemanticModel.GetDeclaredSymbol(syntax.Node, cancellationToken) is INamedTypeSymbol type
                        ? EntityModelReader.ReadClass(type)
                        : null)
            .Where(static model => model is not null)!;

        context.RegisterSourceOutput(interfaces.Collect().Combine(classes.Collect()), static (output, models) =>
        {
            EntitySource source = EntitySource.Build(models.Left, models.Right);
            foreach (DiagnosticInfo diagnostic in source.Diagnostics)
            {
                output.ReportDiagnostic(diagnostic.ToDiagnostic());
            }

            if (source.Text is { } text)
            {
                output.AddSource(FileName, text);
            }
        });
    }
}
