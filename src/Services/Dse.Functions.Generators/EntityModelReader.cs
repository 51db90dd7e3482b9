using Microsoft.CodeAnalysis;

namespace Dse.Functions.Generators;

/// <summary>Reads entity interfaces and entity classes into the generator's models.</summary>
internal static class EntityModelReader
{
    /// <summary>The model of an entity interface, or null when <paramref name="type"/> is not one.</summary>
    public static EntityInterfaceModel? ReadInterface(INamedTypeSymbol type)
    {
        if (!EntitySymbols.IsEntityInterface(type))
        {
            return null;
        }

        var diagnostics = new List<DiagnosticInfo>();
        LocationInfo? location = EntitySymbols.LocationOf(type, null);
        string display = type.ToDisplayString(EntitySymbols.MessageFormat);
        var methods = new List<EntityMethodModel>();
        if (EntitySymbols.IsGeneric(type))
        {
            diagnostics.Add(EntityMethodReader.Info(GeneratorDiagnostics.GenericInterface, location, display));
        }
        else
        {
            if (!EntitySymbols.IsVisibleToAssembly(type))
            {
                diagnostics.Add(EntityMethodReader.Info(GeneratorDiagnostics.Accessibility, location, display));
            }

            List<IMethodSymbol> symbols = EntityMethodReader.Collect(type, location, diagnostics);
            foreach (IMethodSymbol symbol in symbols)
            {
                if (EntityMethodReader.Read(symbol, location, diagnostics) is { } method)
                {
                    methods.Add(method);
                }
            }

            var seen = new HashSet<string>(StringComparer.Ordinal);
            var reported = new HashSet<string>(StringComparer.Ordinal);
            foreach (IMethodSymbol symbol in symbols)
            {
                if (!seen.Add(symbol.Name) && reported.Add(symbol.Name))
                {
                    diagnostics.Add(EntityMethodReader.Info(
                        GeneratorDiagnostics.OverloadInInterface, EntitySymbols.LocationOf(symbol, location), display, symbol.Name));
                }
            }
        }

        return new EntityInterfaceModel(
            type.ToDisplayString(EntitySymbols.CodeFormat), type.Name, methods.ToEquatableArray(), diagnostics.ToEquatableArray());
    }

    /// <summary>The model of an entity class, or null when <paramref name="type"/> is not a concrete one.</summary>
    public static EntityClassModel? ReadClass(INamedTypeSymbol type)
    {
        if (type.TypeKind != TypeKind.Class || type.IsAbstract || type.IsStatic || EntitySymbols.EntityBaseOf(type) is not { } entityBase)
        {
            return null;
        }

        var diagnostics = new List<DiagnosticInfo>();
        LocationInfo? location = EntitySymbols.LocationOf(type, null);
        string display = type.ToDisplayString(EntitySymbols.MessageFormat);
        if (EntitySymbols.IsGeneric(type))
        {
            diagnostics.Add(EntityMethodReader.Info(GeneratorDiagnostics.GenericClass, location, display));
        }

        if (!EntitySymbols.IsVisibleToAssembly(type))
        {
            diagnostics.Add(EntityMethodReader.Info(GeneratorDiagnostics.Accessibility, location, display));
        }

        if (!HasParameterlessConstructor(type))
        {
            diagnostics.Add(EntityMethodReader.Info(GeneratorDiagnostics.NoConstructor, location, display));
        }

        string name = type.Name;
        if (EntitySymbols.FindAttribute(type, "EntityTypeAttribute") is { } attribute)
        {
            name = attribute.ConstructorArguments.Length == 1 && attribute.ConstructorArguments[0].Value is string given ? given : "";
            if (string.IsNullOrWhiteSpace(name))
            {
                diagnostics.Add(EntityMethodReader.Info(GeneratorDiagnostics.EmptyName, location, display));
            }
        }

        ITypeSymbol keyType = entityBase.TypeArguments[0];
        var interfaces = new List<string>();
        var methods = new List<(IMethodSymbol Symbol, EntityMethodModel? Model)>();
        var entityInterfaces = new List<INamedTypeSymbol>();
        bool skipped = false;
        foreach (INamedTypeSymbol candidate in type.AllInterfaces)
        {
            if (!EntitySymbols.IsEntityInterface(candidate))
            {
                continue;
            }

            string candidateDisplay = candidate.ToDisplayString(EntitySymbols.MessageFormat);
            if (EntitySymbols.IsGeneric(candidate) || !EntitySymbols.IsVisibleToAssembly(candidate))
            {
                // An interface of this compilation reports this itself; one from a reference is reported here.
                if (EntitySymbols.IsInSource(candidate))
                {
                    skipped = true;
                }
                else
                {
                    diagnostics.Add(EntityMethodReader.Info(GeneratorDiagnostics.GenericInterface, location, candidateDisplay));
                }

                continue;
            }

            if (EntitySymbols.KeyOf(candidate) is { } candidateKey && !SymbolEqualityComparer.Default.Equals(candidateKey, keyType))
            {
                diagnostics.Add(EntityMethodReader.Info(
                    GeneratorDiagnostics.KeyMismatch,
                    location,
                    display,
                    keyType.ToDisplayString(EntitySymbols.MessageFormat),
                    candidateDisplay,
                    candidateKey.ToDisplayString(EntitySymbols.MessageFormat)));
            }

            entityInterfaces.Add(candidate);
            interfaces.Add(candidate.ToDisplayString(EntitySymbols.CodeFormat));
            foreach (IMethodSymbol symbol in EntityMethodReader.Collect(candidate, location, diagnostics))
            {
                if (!methods.Exists(m => SymbolEqualityComparer.Default.Equals(m.Symbol, symbol)))
                {
                    methods.Add((symbol, EntityMethodReader.Read(symbol, location, diagnostics)));
                }
            }
        }

        skipped |= ReportClassOverloads(display, location, methods.ConvertAll(m => m.Symbol), entityInterfaces, diagnostics);
        var models = new List<EntityMethodModel>();
        foreach ((_, EntityMethodModel? model) in methods)
        {
            skipped |= model is null;
            if (model is not null)
            {
                models.Add(model);
            }
        }

        return new EntityClassModel(
            type.ToDisplayString(EntitySymbols.CodeFormat),
            name,
            keyType.ToDisplayString(EntitySymbols.CodeFormat),
            entityBase.TypeArguments[1].ToDisplayString(EntitySymbols.CodeFormat),
            interfaces.ToEquatableArray(),
            models.ToEquatableArray(),
            location,
            diagnostics.ToEquatableArray(),
            skipped);
    }

    /// <summary>
    /// Reports two methods of one name that reach the class from different interfaces; returns true when some name
    /// repeats inside one interface of this compilation instead, which that interface reports.
    /// </summary>
    private static bool ReportClassOverloads(
        string display, LocationInfo? location, List<IMethodSymbol> methods, List<INamedTypeSymbol> entityInterfaces, List<DiagnosticInfo> diagnostics)
    {
        bool reportedElsewhere = false;
        var reported = new HashSet<string>(StringComparer.Ordinal);
        for (int i = 0; i < methods.Count; i++)
        {
            for (int j = i + 1; j < methods.Count; j++)
            {
                if (methods[i].Name != methods[j].Name || !reported.Add(methods[i].Name))
                {
                    continue;
                }

                if (entityInterfaces.Exists(e => EntitySymbols.IsInSource(e) && Reaches(e, methods[i]) && Reaches(e, methods[j])))
                {
                    reportedElsewhere = true;
                    continue;
                }

                diagnostics.Add(EntityMethodReader.Info(
                    GeneratorDiagnostics.OverloadInClass,
                    location,
                    display,
                    methods[i].Name,
                    methods[i].ContainingType.ToDisplayString(EntitySymbols.MessageFormat),
                    methods[j].ContainingType.ToDisplayString(EntitySymbols.MessageFormat)));
            }
        }

        return reportedElsewhere;
    }

    /// <summary>Whether <paramref name="method"/> is declared by <paramref name="entityInterface"/> or one of its bases.</summary>
    private static bool Reaches(INamedTypeSymbol entityInterface, IMethodSymbol method) =>
        SymbolEqualityComparer.Default.Equals(entityInterface, method.ContainingType)
        || entityInterface.AllInterfaces.Contains(method.ContainingType, SymbolEqualityComparer.Default);

    private static bool HasParameterlessConstructor(INamedTypeSymbol type)
    {
        foreach (IMethodSymbol constructor in type.InstanceConstructors)
        {
            if (constructor.Parameters.Length == 0
                && constructor.DeclaredAccessibility is Accessibility.Public or Accessibility.Internal or Accessibility.ProtectedOrInternal)
            {
                return true;
            }
        }

        return false;
    }
}
