using System.Collections.Immutable;
using Microsoft.CodeAnalysis;

namespace Dse.Functions.Generators;

/// <summary>
/// The warnings of <see cref="DeterminismAnalyzer"/> (DSEF0xx): code in an entity class that would make a
/// transaction behave differently when it is run again, one id per kind of source of nondeterminism.
/// </summary>
internal static class DeterminismDiagnostics
{
    private const string Category = "Dse.Functions.Determinism";

    public static readonly DiagnosticDescriptor Clock = Warning(
        "DSEF001",
        "Entity reads the clock",
        "'{0}' reads the clock, which differs when the transaction runs again: use Context.UtcNow, the transaction's replay-safe time");

    public static readonly DiagnosticDescriptor Random = Warning(
        "DSEF002",
        "Entity uses an unseeded random generator",
        "'{0}' draws random numbers that differ when the transaction runs again: use Context.Random, seeded by the transaction");

    public static readonly DiagnosticDescriptor Guid = Warning(
        "DSEF003",
        "Entity makes a new GUID",
        "'{0}' makes a GUID that differs when the transaction runs again: use Context.NewGuid()");

    public static readonly DiagnosticDescriptor Threading = Warning(
        "DSEF004",
        "Entity starts, delays or blocks on background work",
        "'{0}' starts, delays or blocks on work outside the transaction, but an entity method runs on its partition's thread and may await only entity calls: call another entity instead (a [OneWay] method for work after this one returns)");

    public static readonly DiagnosticDescriptor ConfigureAwait = Warning(
        "DSEF005",
        "Entity awaits with ConfigureAwait(false)",
        "'{0}' resumes the method off its partition's scheduler: remove it and await the entity call as it is");

    public static readonly DiagnosticDescriptor IO = Warning(
        "DSEF006",
        "Entity does I/O",
        "'{0}' does I/O, which is neither replayed nor rolled back with the transaction: do it outside entities, in the client, and pass what it read as arguments");

    public static readonly ImmutableArray<DiagnosticDescriptor> All = [Clock, Random, Guid, Threading, ConfigureAwait, IO];

    private static DiagnosticDescriptor Warning(string id, string title, string message) =>
        new(id, title, message, Category, DiagnosticSeverity.Warning, isEnabledByDefault: true);
}
