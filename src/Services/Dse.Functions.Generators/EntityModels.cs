using Microsoft.CodeAnalysis;
using Microsoft.CodeAnalysis.Text;

namespace Dse.Functions.Generators;

/// <summary>An entity interface as the generator reads it: what its proxy needs, or why it gets none.</summary>
/// <param name="FullName">The interface, <c>global::</c>-qualified: also the sort key of the output.</param>
/// <param name="SimpleName">Its name without namespace, for the proxy class's name.</param>
/// <param name="Methods">Every method of the interface and of its base interfaces.</param>
/// <param name="Diagnostics">Errors that prevent a proxy.</param>
internal sealed record EntityInterfaceModel(
    string FullName, string SimpleName, EquatableArray<EntityMethodModel> Methods, EquatableArray<DiagnosticInfo> Diagnostics);

/// <summary>An entity class as the generator reads it: what its registration needs, or why it gets none.</summary>
/// <param name="FullName">The class, <c>global::</c>-qualified.</param>
/// <param name="EntityName">The entity type's name: the <c>[EntityType]</c> argument or the class name.</param>
/// <param name="KeyType">The key type of its <c>Entity&lt;TKey, TState&gt;</c> base.</param>
/// <param name="StateType">The state type of its <c>Entity&lt;TKey, TState&gt;</c> base.</param>
/// <param name="Interfaces">The entity interfaces it implements, <c>global::</c>-qualified.</param>
/// <param name="Methods">The methods of those interfaces, each once.</param>
/// <param name="Location">Where the class is declared, for diagnostics found when all classes are seen together.</param>
/// <param name="Diagnostics">Errors that prevent a registration.</param>
/// <param name="Skipped">
/// True when the registration is left out for an error reported elsewhere (on one of its interfaces).
/// </param>
internal sealed record EntityClassModel(
    string FullName,
    string EntityName,
    string KeyType,
    string StateType,
    EquatableArray<string> Interfaces,
    EquatableArray<EntityMethodModel> Methods,
    LocationInfo? Location,
    EquatableArray<DiagnosticInfo> Diagnostics,
    bool Skipped);

/// <summary>One entity method.</summary>
/// <param name="Name">The method's name: its name on the wire.</param>
/// <param name="Interface">The interface that declares it, <c>global::</c>-qualified.</param>
/// <param name="ResultType">The <c>T</c> of <c>Task&lt;T&gt;</c>, or null for <c>Task</c>.</param>
/// <param name="OneWay">Whether it has <c>[OneWay]</c>.</param>
/// <param name="Parameters">Its parameters.</param>
internal sealed record EntityMethodModel(
    string Name, string Interface, string? ResultType, bool OneWay, EquatableArray<EntityParameterModel> Parameters);

/// <summary>One parameter of an entity method.</summary>
/// <param name="Type">Its type, <c>global::</c>-qualified with nullable annotations.</param>
/// <param name="Name">Its name, escaped with <c>@</c> when it is a keyword.</param>
internal sealed record EntityParameterModel(string Type, string Name);

/// <summary>A diagnostic kept as plain data, so that models stay comparable across compilations.</summary>
/// <param name="Id">The descriptor's id (see <see cref="GeneratorDiagnostics"/>).</param>
/// <param name="Location">Where to report it, or null for no location.</param>
/// <param name="Arguments">The message's arguments.</param>
internal sealed record DiagnosticInfo(string Id, LocationInfo? Location, EquatableArray<string> Arguments)
{
    public Diagnostic ToDiagnostic() =>
        Diagnostic.Create(GeneratorDiagnostics.ById(Id), Location?.ToLocation(), Arguments.ToArray<object?>());
}

/// <summary>A source location kept as plain data.</summary>
/// <param name="FilePath">The file.</param>
/// <param name="Span">The text span.</param>
/// <param name="LineSpan">The line span.</param>
internal sealed record LocationInfo(string FilePath, TextSpan Span, LinePositionSpan LineSpan)
{
    public Location ToLocation() => Location.Create(FilePath, Span, LineSpan);

    public static LocationInfo? From(Location? location) =>
        location is { IsInSource: true, SourceTree: not null }
            ? new LocationInfo(location.SourceTree.FilePath, location.SourceSpan, location.GetLineSpan().Span)
            : null;
}
