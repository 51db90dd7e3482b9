using Microsoft.CodeAnalysis;
using Microsoft.CodeAnalysis.CSharp;

namespace Dse.Functions.Generators;

/// <summary>
/// Recognizes the Dse.Functions types by name (no compilation-wide look-up per syntax node) and formats symbols for
/// generated code and messages.
/// </summary>
internal static class EntitySymbols
{
    /// <summary><c>global::</c>-qualified, keywords for special types, nullable annotations kept.</summary>
    public static readonly SymbolDisplayFormat CodeFormat = SymbolDisplayFormat.FullyQualifiedFormat
        .AddMiscellaneousOptions(SymbolDisplayMiscellaneousOptions.IncludeNullableReferenceTypeModifier);

    /// <summary>Short names for messages (<c>IAccount</c>, <c>Outer.IAccount</c>, <c>Task&lt;long&gt;</c>).</summary>
    public static readonly SymbolDisplayFormat MessageFormat = new(
        typeQualificationStyle: SymbolDisplayTypeQualificationStyle.NameAndContainingTypes,
        genericsOptions: SymbolDisplayGenericsOptions.IncludeTypeParameters,
        miscellaneousOptions: SymbolDisplayMiscellaneousOptions.UseSpecialTypes
            | SymbolDisplayMiscellaneousOptions.EscapeKeywordIdentifiers
            | SymbolDisplayMiscellaneousOptions.IncludeNullableReferenceTypeModifier);

    /// <summary>Whether <paramref name="type"/> is <c>IEntity</c> or <c>IEntity&lt;TKey&gt;</c> itself.</summary>
    public static bool IsEntityMarker(INamedTypeSymbol type) =>
        type.MetadataName is "IEntity" or "IEntity`1" && IsInDseFunctions(type);

    /// <summary>Whether <paramref name="type"/> is an interface deriving from <c>IEntity&lt;TKey&gt;</c>.</summary>
    public static bool IsEntityInterface(INamedTypeSymbol type) =>
        type.TypeKind == TypeKind.Interface && !IsEntityMarker(type) && KeyOf(type) is not null;

    /// <summary>The <c>TKey</c> of the <c>IEntity&lt;TKey&gt;</c> an entity interface derives from, or null.</summary>
    public static ITypeSymbol? KeyOf(INamedTypeSymbol entityInterface)
    {
        foreach (INamedTypeSymbol candidate in entityInterface.AllInterfaces)
        {
            if (candidate.MetadataName == "IEntity`1" && IsInDseFunctions(candidate))
            {
                return candidate.TypeArguments[0];
            }
        }

        return null;
    }

    /// <summary>The constructed <c>Entity&lt;TKey, TState&gt;</c> a class derives from (at any depth), or null.</summary>
    public static INamedTypeSymbol? EntityBaseOf(INamedTypeSymbol type)
    {
        for (INamedTypeSymbol? current = type.BaseType; current is not null; current = current.BaseType)
        {
            if (current.MetadataName == "Entity`2" && IsInDseFunctions(current))
            {
                return current;
            }
        }

        return null;
    }

    /// <summary>The Dse.Functions attribute of metadata name <paramref name="name"/> on <paramref name="symbol"/>, or null.</summary>
    public static AttributeData? FindAttribute(ISymbol symbol, string name)
    {
        foreach (AttributeData attribute in symbol.GetAttributes())
        {
            if (attribute.AttributeClass is { } type && type.MetadataName == name && IsInDseFunctions(type))
            {
                return attribute;
            }
        }

        return null;
    }

    /// <summary>Whether a type or one it is nested in has type parameters.</summary>
    public static bool IsGeneric(INamedTypeSymbol type)
    {
        for (INamedTypeSymbol? current = type; current is not null; current = current.ContainingType)
        {
            if (current.TypeParameters.Length > 0)
            {
                return true;
            }
        }

        return false;
    }

    /// <summary>Whether code anywhere in the type's assembly can name it (so not file-local, private or protected).</summary>
    public static bool IsVisibleToAssembly(INamedTypeSymbol type)
    {
        for (INamedTypeSymbol? current = type; current is not null; current = current.ContainingType)
        {
            if (current.IsFileLocal
                || current.DeclaredAccessibility is not (Accessibility.Public or Accessibility.Internal or Accessibility.ProtectedOrInternal))
            {
                return false;
            }
        }

        return true;
    }

    /// <summary>Whether the symbol is declared in this compilation's source.</summary>
    public static bool IsInSource(ISymbol symbol)
    {
        foreach (Location location in symbol.OriginalDefinition.Locations)
        {
            if (location.IsInSource)
            {
                return true;
            }
        }

        return false;
    }

    /// <summary>The symbol's first source location, or <paramref name="fallback"/>.</summary>
    public static LocationInfo? LocationOf(ISymbol symbol, LocationInfo? fallback)
    {
        foreach (Location location in symbol.Locations)
        {
            if (location.IsInSource)
            {
                return LocationInfo.From(location);
            }
        }

        return fallback;
    }

    /// <summary>An identifier as C# source: prefixed with <c>@</c> when it is a keyword.</summary>
    public static string Identifier(string name) =>
        SyntaxFacts.GetKeywordKind(name) != SyntaxKind.None ? "@" + name : name;

    private static bool IsInDseFunctions(INamedTypeSymbol type) =>
        type.ContainingType is null
        && type.ContainingNamespace is { Name: "Functions" } functions
        && functions.ContainingNamespace is { Name: "Dse" } dse
        && dse.ContainingNamespace is { IsGlobalNamespace: true };
}
