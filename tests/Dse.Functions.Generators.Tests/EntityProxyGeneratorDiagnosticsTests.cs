using Microsoft.CodeAnalysis;

namespace Dse.Functions.Generators.Tests;

/// <summary>Each DSEF1xx error fires on a minimal bad input, names what is wrong, and stays quiet on its good twin.</summary>
public sealed class EntityProxyGeneratorDiagnosticsTests
{
    private const string Usings = """
        using System.Threading.Tasks;
        using Dse.Functions;

        namespace Bad;

        """;

    public static TheoryData<string, string, string, string> BadInputs => new()
    {
        {
            "DSEF101", "'IA.Get' returns 'int'", "Get",
            "public interface IA : IEntity<string> { int Get(); }"
        },
        {
            "DSEF101", "'IA.Get' returns 'ValueTask<int>'", "Get",
            "public interface IA : IEntity<string> { ValueTask<int> Get(); }"
        },
        {
            "DSEF102", "'IA.Ping' returns 'Task<int>'", "Ping",
            "public interface IA : IEntity<string> { [OneWay] Task<int> Ping(); }"
        },
        {
            "DSEF103", "'IA' has more than one method named 'Put'", "Put",
            "public interface IA : IEntity<string> { Task Put(int x); Task Put(string x); }"
        },
        {
            "DSEF103", "'IB' has more than one method named 'Put'", "Put",
            "public interface IA : IEntity<string> { Task Put(int x); } public interface IB : IA { new Task Put(int x); }"
        },
        {
            "DSEF104", "'C' gets a method named 'Put' from both 'IA' and 'IB'", "C",
            """
            public interface IA : IEntity<string> { Task Put(int x); }
            public interface IB : IEntity<string> { Task Put(string x); }
            public sealed class C : Entity<string, int>, IA, IB
            {
                public Task Put(int x) => Task.CompletedTask;
                public Task Put(string x) => Task.CompletedTask;
            }
            """
        },
        {
            "DSEF105", "'IA.Get' is generic", "Get",
            "public interface IA : IEntity<string> { Task<T> Get<T>(); }"
        },
        {
            "DSEF106", "Parameter 'x' of entity method 'IA.Put' is ref", "x",
            "public interface IA : IEntity<string> { Task Put(ref int x); }"
        },
        {
            "DSEF106", "Parameter 'x' of entity method 'IA.Put' is out", "x",
            "public interface IA : IEntity<string> { Task Put(out int x); }"
        },
        {
            "DSEF106", "Parameter 'x' of entity method 'IA.Put' is in", "x",
            "public interface IA : IEntity<string> { Task Put(in int x); }"
        },
        {
            "DSEF106", "Parameter 'xs' of entity method 'IA.Put' is params", "xs",
            "public interface IA : IEntity<string> { Task Put(params int[] xs); }"
        },
        {
            "DSEF107", "'C' has no public or internal parameterless constructor", "C",
            "public sealed class C : Entity<string, int> { public C(int seed) { } }"
        },
        {
            "DSEF107", "'C' has no public or internal parameterless constructor", "C",
            "public sealed class C : Entity<string, int> { private C() { } }"
        },
        {
            "DSEF108", "'C<T>' is generic", "C",
            "public sealed class C<T> : Entity<string, T>;"
        },
        {
            "DSEF109", "'IA<T>' is generic", "IA",
            "public interface IA<T> : IEntity<T> where T : notnull { Task Put(T x); }"
        },
        {
            "DSEF110", "Member 'Count' of entity interface 'IA' is a property", "Count",
            "public interface IA : IEntity<string> { int Count { get; } }"
        },
        {
            "DSEF110", "Member 'Changed' of entity interface 'IA' is an event", "Changed",
            "public interface IA : IEntity<string> { event System.Action Changed; }"
        },
        {
            "DSEF111", "'Outer.IA' is not accessible", "IA",
            "public class Outer { private interface IA : IEntity<string> { Task Put(); } }"
        },
        {
            "DSEF111", "'C' is not accessible", "C",
            "file sealed class C : Entity<string, int>;"
        },
        {
            "DSEF112", "'C' has key type 'string' but implements entity interface 'IA' whose key type is 'long'", "C",
            """
            public interface IA : IEntity<long> { Task Put(); }
            public sealed class C : Entity<string, int>, IA { public Task Put() => Task.CompletedTask; }
            """
        },
        {
            "DSEF113", "'C' has an empty [EntityType] name", "C",
            "[EntityType(\"\")] public sealed class C : Entity<string, int>;"
        },
        {
            "DSEF114", "'Bad.C1' and 'Bad.C2' both have the entity type name 'same'", "C2",
            "[EntityType(\"same\")] public sealed class C1 : Entity<string, int>; [EntityType(\"same\")] public sealed class C2 : Entity<string, int>;"
        },
    };

    public static TheoryData<string> GoodInputs => new()
    {
        // Not entity types: nothing to check.
        "public interface IPlain { int Get(); ref int Put(ref int x); }",
        "public interface IGeneric<T> { Task<T> Get<TOther>(); }",
        "public sealed class Plain { private Plain() { } }",
        // Abstract entity classes are not registered, so they need no constructor and may be generic.
        "public abstract class Base<T> : Entity<string, T> { protected Base(int seed) { } }",
        // The good twins of the bad inputs.
        "public interface IA : IEntity<string> { Task<int> Get(); [OneWay] Task Ping(); Task Put(int x, string y); }",
        "public interface IA : IEntity<string> { Task Put(int x); } public interface IB : IEntity<string> { Task Post(string x); }",
        "public sealed class C : Entity<string, int> { internal C() { } public C(int seed) { } }",
        "public sealed class C : Entity<string, int> { public C() { } }",
        "[EntityType(\"c1\")] public sealed class C1 : Entity<string, int>; [EntityType(\"c2\")] public sealed class C2 : Entity<string, int>;",
        "public interface IA : IEntity<string> { int Count => 0; static int Zero() => 0; Task Put(int x); }",
        "public class Outer { internal interface IA : IEntity<string> { Task Put(); } }",
        """
        public interface IA : IEntity<string> { Task Put(); }
        public interface IB : IA { Task Post(); }
        public sealed class C : Entity<string, int>, IA, IB
        {
            public Task Put() => Task.CompletedTask;
            public Task Post() => Task.CompletedTask;
        }
        """,
    };

    [Theory]
    [MemberData(nameof(BadInputs))]
    public void Generate_BadInput_ReportsError(string id, string messagePart, string locatedAt, string source)
    {
        GeneratorOutput output = TestCompilation.Generate(Usings + source);

        Diagnostic diagnostic = Assert.Single(output.Diagnostics);
        Assert.Equal(id, diagnostic.Id);
        Assert.Equal(DiagnosticSeverity.Error, diagnostic.Severity);
        Assert.Contains(messagePart, diagnostic.GetMessage(System.Globalization.CultureInfo.InvariantCulture), StringComparison.Ordinal);

        // Reported at the member or type at fault, in the user's file.
        Assert.Equal("Source0.cs", diagnostic.Location.GetLineSpan().Path);
        Assert.Equal(locatedAt, (Usings + source).Substring(diagnostic.Location.SourceSpan.Start, diagnostic.Location.SourceSpan.Length));
    }

    [Theory]
    [MemberData(nameof(GoodInputs))]
    public void Generate_GoodInput_ReportsNothingAndCompiles(string source)
    {
        GeneratorOutput output = TestCompilation.Generate(Usings + source);

        Assert.Empty(output.AllProblems);
    }

    [Fact]
    public void Generate_BadMethod_IsReportedOnceAndLeavesTheRestGenerated()
    {
        // One bad method reached from an interface, a derived interface and a class: one diagnostic; the valid
        // interface next to it still gets its proxy.
        const string source = """
            public interface IA : IEntity<string> { int Get(); }
            public interface IB : IA { Task Put(); }
            public sealed class C : Entity<string, int>, IB
            {
                public int Get() => 0;
                public Task Put() => Task.CompletedTask;
            }
            public interface IOk : IEntity<string> { Task Put(); }
            """;

        GeneratorOutput output = TestCompilation.Generate(Usings + source);

        Diagnostic diagnostic = Assert.Single(output.Diagnostics);
        Assert.Equal("DSEF101", diagnostic.Id);
        Assert.Contains("RegisterProxy<global::Bad.IOk>", output.Source, StringComparison.Ordinal);
        Assert.DoesNotContain("RegisterProxy<global::Bad.IA>", output.Source, StringComparison.Ordinal);
        Assert.DoesNotContain("RegisterEntity<global::Bad.C,", output.Source, StringComparison.Ordinal);
    }
}
