using Microsoft.CodeAnalysis;

namespace Dse.Functions.Generators;

/// <summary>
/// The errors of <see cref="EntityProxyGenerator"/> (DSEF1xx): entity interfaces and classes the generated code could
/// not call correctly. Each names the type or method at fault.
/// </summary>
internal static class GeneratorDiagnostics
{
    private const string Category = "Dse.Functions";

    public static readonly DiagnosticDescriptor ReturnType = Error(
        "DSEF101",
        "Entity method must return Task or Task<T>",
        "Entity method '{0}' returns '{1}': an entity method must return Task or Task<T>");

    public static readonly DiagnosticDescriptor OneWayWithResult = Error(
        "DSEF102",
        "One-way entity method must return Task",
        "One-way entity method '{0}' returns '{1}': a [OneWay] method returns before it runs, so it must return Task");

    public static readonly DiagnosticDescriptor OverloadInInterface = Error(
        "DSEF103",
        "Entity interface has overloaded methods",
        "Entity interface '{0}' has more than one method named '{1}': entity methods are called by name, so give each a distinct name");

    public static readonly DiagnosticDescriptor OverloadInClass = Error(
        "DSEF104",
        "Entity class gets two methods of the same name from its interfaces",
        "Entity class '{0}' gets a method named '{1}' from both '{2}' and '{3}': entity methods are called by name, so give each a distinct name");

    public static readonly DiagnosticDescriptor GenericMethod = Error(
        "DSEF105",
        "Entity method must not be generic",
        "Entity method '{0}' is generic: an entity method's argument and result types must be fixed");

    public static readonly DiagnosticDescriptor ParameterKind = Error(
        "DSEF106",
        "Entity method parameter must be passed by value",
        "Parameter '{1}' of entity method '{0}' is {2}: entity method arguments are serialized, so pass them by value (no ref, out, in, params, ref struct or pointer)");

    public static readonly DiagnosticDescriptor NoConstructor = Error(
        "DSEF107",
        "Entity class needs a parameterless constructor",
        "Entity class '{0}' has no public or internal parameterless constructor: the runtime creates an instance for each invocation with it");

    public static readonly DiagnosticDescriptor GenericClass = Error(
        "DSEF108",
        "Entity class must not be generic",
        "Entity class '{0}' is generic: derive a non-generic class for each key and state type");

    public static readonly DiagnosticDescriptor GenericInterface = Error(
        "DSEF109",
        "Entity interface must not be generic",
        "Entity interface '{0}' is generic: a proxy is written for each entity interface, so declare a non-generic interface");

    public static readonly DiagnosticDescriptor MemberKind = Error(
        "DSEF110",
        "Entity interface may only declare instance methods",
        "Member '{0}' of entity interface '{1}' is {2}: an entity interface may only declare instance methods");

    public static readonly DiagnosticDescriptor Accessibility = Error(
        "DSEF111",
        "Entity type must be visible to its assembly",
        "Entity type '{0}' is not accessible to the code generated for its assembly: make it (and any type it is nested in) public or internal");

    public static readonly DiagnosticDescriptor KeyMismatch = Error(
        "DSEF112",
        "Entity interface and entity class have different key types",
        "Entity class '{0}' has key type '{1}' but implements entity interface '{2}' whose key type is '{3}'");

    public static readonly DiagnosticDescriptor EmptyName = Error(
        "DSEF113",
        "Entity type name must not be empty",
        "Entity class '{0}' has an empty [EntityType] name: give it a non-empty name that stays stable across versions");

    public static readonly DiagnosticDescriptor DuplicateName = Error(
        "DSEF114",
        "Entity type name is used twice",
        "Entity classes '{0}' and '{1}' both have the entity type name '{2}': names address state, so each must be unique");

    private static readonly DiagnosticDescriptor[] All =
    [
        ReturnType, OneWayWithResult, OverloadInInterface, OverloadInClass, GenericMethod, ParameterKind, NoConstructor,
        GenericClass, GenericInterface, MemberKind, Accessibility, KeyMismatch, EmptyName, DuplicateName,
    ];

    public static DiagnosticDescriptor ById(string id)
    {
        foreach (DiagnosticDescriptor descriptor in All)
        {
            if (descriptor.Id == id)
            {
                return descriptor;
            }
        }

        throw new ArgumentException($"No generator diagnostic has id '{id}'.", nameof(id));
    }

    private static DiagnosticDescriptor Error(string id, string title, string message) =>
        new(id, title, message, Category, DiagnosticSeverity.Error, isEnabledByDefault: true);
}
