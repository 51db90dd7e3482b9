using Microsoft.CodeAnalysis;

namespace Dse.Functions.Generators;

/// <summary>
/// Reads the methods of an entity interface (its own and its base interfaces') into models, reporting the ones the
/// generated code cannot call. A problem in source is reported at the member; one in a referenced assembly at the
/// fallback location (the interface or class being generated), so that the same problem found from an interface and
/// from a class implementing it is one diagnostic.
/// </summary>
internal static class EntityMethodReader
{
    /// <summary>The instance methods of <paramref name="entityInterface"/> and its base interfaces, each once.</summary>
    public static List<IMethodSymbol> Collect(INamedTypeSymbol entityInterface, LocationInfo? fallback, List<DiagnosticInfo> diagnostics)
    {
        var methods = new List<IMethodSymbol>();
        var types = new List<INamedTypeSymbol> { entityInterface };
        types.AddRange(entityInterface.AllInterfaces);
        foreach (INamedTypeSymbol type in types)
        {
            if (EntitySymbols.IsEntityMarker(type))
            {
                continue;
            }

            foreach (ISymbol member in type.GetMembers())
            {
                if (member is IMethodSymbol { MethodKind: MethodKind.Ordinary, IsStatic: false, IsSealed: false } method
                    && method.DeclaredAccessibility != Accessibility.Private)
                {
                    methods.Add(method);
                }
                else if (member.IsAbstract && DescribeUnsupported(member) is { } kind)
                {
                    diagnostics.Add(Info(
                        GeneratorDiagnostics.MemberKind,
                        EntitySymbols.LocationOf(member, fallback),
                        member.Name,
                        type.ToDisplayString(EntitySymbols.MessageFormat),
                        kind));
                }
            }
        }

        return methods;
    }

    /// <summary>The model of <paramref name="method"/>, or null (with diagnostics) when generated code cannot call it.</summary>
    public static EntityMethodModel? Read(IMethodSymbol method, LocationInfo? fallback, List<DiagnosticInfo> diagnostics)
    {
        int before = diagnostics.Count;
        LocationInfo? location = EntitySymbols.LocationOf(method, fallback);
        string name = Describe(method);
        if (method.IsGenericMethod)
        {
            diagnostics.Add(Info(GeneratorDiagnostics.GenericMethod, location, name));
        }

        bool oneWay = EntitySymbols.FindAttribute(method, "OneWayAttribute") is not null;
        string? resultType = null;
        if (method.ReturnType is not INamedTypeSymbol
            {
                Name: "Task",
                ContainingNamespace: { Name: "Tasks", ContainingNamespace: { Name: "Threading", ContainingNamespace: { Name: "System", ContainingNamespace.IsGlobalNamespace: true } } },
            } task
            || task.TypeArguments.Length > 1)
        {
            diagnostics.Add(Info(GeneratorDiagnostics.ReturnType, location, name, method.ReturnType.ToDisplayString(EntitySymbols.MessageFormat)));
        }
        else if (task.TypeArguments.Length == 1)
        {
            resultType = task.TypeArguments[0].ToDisplayString(EntitySymbols.CodeFormat);
            if (oneWay)
            {
                diagnostics.Add(Info(GeneratorDiagnostics.OneWayWithResult, location, name, method.ReturnType.ToDisplayString(EntitySymbols.MessageFormat)));
            }
        }

        var parameters = new EntityParameterModel[method.Parameters.Length];
        for (int i = 0; i < parameters.Length; i++)
        {
            IParameterSymbol parameter = method.Parameters[i];
            if (DescribePassing(parameter) is { } passing)
            {
                diagnostics.Add(Info(GeneratorDiagnostics.ParameterKind, EntitySymbols.LocationOf(parameter, location), name, parameter.Name, passing));
            }

            parameters[i] = new EntityParameterModel(
                parameter.Type.ToDisplayString(EntitySymbols.CodeFormat), EntitySymbols.Identifier(parameter.Name));
        }

        return diagnostics.Count > before
            ? null
            : new EntityMethodModel(
                method.Name,
                method.ContainingType.ToDisplayString(EntitySymbols.CodeFormat),
                resultType,
                oneWay,
                new EquatableArray<EntityParameterModel>(parameters));
    }

    /// <summary>How messages name a method: <c>IAccount.Withdraw</c>.</summary>
    public static string Describe(IMethodSymbol method) =>
        method.ContainingType.ToDisplayString(EntitySymbols.MessageFormat) + "." + method.Name;

    /// <summary>A diagnostic as data.</summary>
    public static DiagnosticInfo Info(DiagnosticDescriptor descriptor, LocationInfo? location, params string[] arguments) =>
        new(descriptor.Id, location, new EquatableArray<string>(arguments));

    private static string? DescribeUnsupported(ISymbol member) => member switch
    {
        IMethodSymbol { IsStatic: true, MethodKind: MethodKind.Ordinary or MethodKind.UserDefinedOperator or MethodKind.Conversion } =>
            "a static abstract method",
        IMethodSymbol => null,
        IPropertySymbol { IsIndexer: true } => "an indexer",
        IPropertySymbol => "a property",
        IEventSymbol => "an event",
        _ => "not a method",
    };

    private static string? DescribePassing(IParameterSymbol parameter)
    {
        if (parameter.IsParams)
        {
            return "params";
        }

        switch (parameter.RefKind)
        {
            case RefKind.Ref:
                return "ref";
            case RefKind.Out:
                return "out";
            case RefKind.In:
                return "in";
            case RefKind.None:
                break;
            default:
                return "ref readonly";
        }

        return parameter.Type switch
        {
            { IsRefLikeType: true } => "a ref struct",
            IPointerTypeSymbol or IFunctionPointerTypeSymbol => "a pointer",
            _ => null,
        };
    }
}
