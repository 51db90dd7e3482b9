using Microsoft.CodeAnalysis;
using Microsoft.CodeAnalysis.Diagnostics;
using Microsoft.CodeAnalysis.Operations;

namespace Dse.Functions.Generators;

/// <summary>
/// Which members and constructors are nondeterministic, resolved once per compilation. Member uses are matched by the
/// member's containing type (its original definition); constructions by the type created.
/// </summary>
internal sealed class DeterminismRules
{
    private readonly Dictionary<INamedTypeSymbol, TypeRule> _rules = new(SymbolEqualityComparer.Default);
    private readonly INamedTypeSymbol? _stream;
    private readonly INamedTypeSymbol? _memoryStream;
    private readonly INamedTypeSymbol? _httpMessageInvoker;

    public DeterminismRules(Compilation compilation)
    {
        DiagnosticDescriptor clock = DeterminismDiagnostics.Clock;
        DiagnosticDescriptor random = DeterminismDiagnostics.Random;
        DiagnosticDescriptor threading = DeterminismDiagnostics.Threading;
        DiagnosticDescriptor io = DeterminismDiagnostics.IO;

        Add(compilation, "System.DateTime", new TypeRule(clock) { StaticMembers = ["Now", "UtcNow", "Today"] });
        Add(compilation, "System.DateTimeOffset", new TypeRule(clock) { StaticMembers = ["Now", "UtcNow"] });
        Add(compilation, "System.Environment", new TypeRule(clock) { StaticMembers = ["TickCount", "TickCount64"] });
        Add(compilation, "System.Diagnostics.Stopwatch", new TypeRule(clock) { Construction = true, AllStatic = true, AllInstance = true });
        Add(compilation, "System.TimeProvider", new TypeRule(clock) { StaticMembers = ["System"] });

        Add(compilation, "System.Random", new TypeRule(random) { Construction = true, StaticMembers = ["Shared"] });
        Add(compilation, "System.Security.Cryptography.RandomNumberGenerator", new TypeRule(random) { AllStatic = true });

        Add(compilation, "System.Guid", new TypeRule(DeterminismDiagnostics.Guid) { StaticMembers = ["NewGuid", "CreateVersion7"] });

        Add(compilation, "System.Threading.Tasks.Task", new TypeRule(threading) { Construction = true, StaticMembers = ["Run", "Delay", "Yield"] });
        Add(compilation, "System.Threading.Tasks.Task`1", new TypeRule(threading) { Construction = true });
        Add(compilation, "System.Threading.Tasks.TaskFactory", new TypeRule(threading) { InstanceMembers = ["StartNew"] });
        Add(compilation, "System.Threading.Tasks.TaskFactory`1", new TypeRule(threading) { InstanceMembers = ["StartNew"] });
        Add(compilation, "System.Threading.Tasks.Parallel", new TypeRule(threading) { AllStatic = true });
        Add(compilation, "System.Threading.Thread", new TypeRule(threading) { Construction = true, StaticMembers = ["Sleep", "SpinWait", "Yield"] });
        Add(compilation, "System.Threading.ThreadPool", new TypeRule(threading) { AllStatic = true });
        Add(compilation, "System.Threading.Timer", new TypeRule(threading) { Construction = true });
        Add(compilation, "System.Threading.PeriodicTimer", new TypeRule(threading) { Construction = true });
        Add(compilation, "System.Timers.Timer", new TypeRule(threading) { Construction = true });

        Add(compilation, "System.IO.File", new TypeRule(io) { AllStatic = true });
        Add(compilation, "System.IO.Directory", new TypeRule(io) { AllStatic = true });
        Add(compilation, "System.IO.FileInfo", new TypeRule(io) { Construction = true });
        Add(compilation, "System.IO.DirectoryInfo", new TypeRule(io) { Construction = true });
        Add(compilation, "System.IO.DriveInfo", new TypeRule(io) { Construction = true, AllStatic = true });
        Add(compilation, "System.IO.FileSystemWatcher", new TypeRule(io) { Construction = true });
        Add(compilation, "System.Console", new TypeRule(io) { AllStatic = true });
        Add(compilation, "System.Net.Dns", new TypeRule(io) { AllStatic = true });
        Add(compilation, "System.IO.StreamReader", new TypeRule(io) { PathConstruction = true });
        Add(compilation, "System.IO.StreamWriter", new TypeRule(io) { PathConstruction = true });
        _stream = compilation.GetTypeByMetadataName("System.IO.Stream");
        _memoryStream = compilation.GetTypeByMetadataName("System.IO.MemoryStream");
        _httpMessageInvoker = compilation.GetTypeByMetadataName("System.Net.Http.HttpMessageInvoker");
    }

    /// <summary>Reports the operation when it uses something nondeterministic.</summary>
    public void Analyze(OperationAnalysisContext context)
    {
        IOperation operation = context.Operation;
        (DiagnosticDescriptor Descriptor, string What)? found = operation switch
        {
            IObjectCreationOperation { Type: INamedTypeSymbol type } creation =>
                Construction(type, creation.Constructor) is { } rule ? (rule, "new " + type.Name) : null,
            IInvocationOperation invocation when IsConfigureAwaitFalse(invocation) =>
                (DeterminismDiagnostics.ConfigureAwait, invocation.TargetMethod.Name + "(" + ConfigureAwaitArgument(invocation) + ")"),
            IInvocationOperation invocation => Member(invocation.TargetMethod, invocation.Instance),
            IPropertyReferenceOperation property => Member(property.Property, property.Instance),
            IMethodReferenceOperation method => Member(method.Method, method.Instance),
            _ => null,
        };

        if (found is { } hit && !InsideNameOf(operation))
        {
            context.ReportDiagnostic(Diagnostic.Create(hit.Descriptor, operation.Syntax.GetLocation(), hit.What));
        }
    }

    private void Add(Compilation compilation, string metadataName, TypeRule rule)
    {
        if (compilation.GetTypeByMetadataName(metadataName) is { } type)
        {
            _rules[type] = rule;
        }
    }

    private DiagnosticDescriptor? Construction(INamedTypeSymbol type, IMethodSymbol? constructor)
    {
        if (_rules.TryGetValue(type.OriginalDefinition, out TypeRule? rule)
            && (rule.Construction || (rule.PathConstruction && constructor is { Parameters.Length: > 0 } && constructor.Parameters[0].Name == "path")))
        {
            return rule.Descriptor;
        }

        if ((DerivesFrom(type, _stream) && !DerivesFrom(type, _memoryStream)) || DerivesFrom(type, _httpMessageInvoker) || IsSockets(type))
        {
            return DeterminismDiagnostics.IO;
        }

        return null;
    }

    private (DiagnosticDescriptor, string)? Member(ISymbol member, IOperation? instance)
    {
        INamedTypeSymbol type = member.ContainingType.OriginalDefinition;
        string what = member.ContainingType.Name + "." + member.Name;
        if (_rules.TryGetValue(type, out TypeRule? rule))
        {
            bool matches = member.IsStatic
                ? rule.AllStatic || rule.StaticMembers.Contains(member.Name)
                : rule.AllInstance || rule.InstanceMembers.Contains(member.Name);
            return matches && !CreatedInPlace(instance) ? (rule.Descriptor, what) : null;
        }

        // Every use of a socket or HTTP client is I/O; its construction is reported once, not again for each member
        // called on the new instance.
        if ((IsSockets(type) || DerivesFrom(type, _httpMessageInvoker)) && !CreatedInPlace(instance))
        {
            return (DeterminismDiagnostics.IO, what);
        }

        return null;
    }

    /// <summary>Whether the receiver is a construction, already reported.</summary>
    private bool CreatedInPlace(IOperation? instance)
    {
        while (instance is IConversionOperation or IParenthesizedOperation)
        {
            instance = instance is IConversionOperation conversion ? conversion.Operand : ((IParenthesizedOperation)instance).Operand;
        }

        return instance is IObjectCreationOperation { Type: INamedTypeSymbol type } creation && Construction(type, creation.Constructor) is not null;
    }

    private static bool IsConfigureAwaitFalse(IInvocationOperation invocation)
    {
        if (invocation.TargetMethod.Name != "ConfigureAwait")
        {
            return false;
        }

        foreach (IArgumentOperation argument in invocation.Arguments)
        {
            if (argument.Parameter?.Type.SpecialType == SpecialType.System_Boolean)
            {
                return argument.Value.ConstantValue is { HasValue: true, Value: false };
            }

            // ConfigureAwaitOptions: without ContinueOnCapturedContext (1) the continuation leaves the scheduler.
            if (argument.Parameter?.Type is { Name: "ConfigureAwaitOptions", TypeKind: TypeKind.Enum })
            {
                return argument.Value.ConstantValue is { HasValue: true, Value: int options } && (options & 1) == 0;
            }
        }

        return false;
    }

    private static string ConfigureAwaitArgument(IInvocationOperation invocation)
    {
        foreach (IArgumentOperation argument in invocation.Arguments)
        {
            if (argument.Parameter?.Type.SpecialType == SpecialType.System_Boolean)
            {
                return "false";
            }

            if (argument.Parameter?.Type is { Name: "ConfigureAwaitOptions" })
            {
                return argument.Value.Syntax.ToString();
            }
        }

        return "";
    }

    private static bool InsideNameOf(IOperation operation)
    {
        for (IOperation? current = operation.Parent; current is not null; current = current.Parent)
        {
            if (current is INameOfOperation)
            {
                return true;
            }
        }

        return false;
    }

    private static bool DerivesFrom(INamedTypeSymbol type, INamedTypeSymbol? baseType)
    {
        if (baseType is null)
        {
            return false;
        }

        for (INamedTypeSymbol? current = type; current is not null; current = current.BaseType)
        {
            if (SymbolEqualityComparer.Default.Equals(current, baseType))
            {
                return true;
            }
        }

        return false;
    }

    private static bool IsSockets(INamedTypeSymbol type) =>
        type.ContainingNamespace is { Name: "Sockets" } sockets
        && sockets.ContainingNamespace is { Name: "Net" } net
        && net.ContainingNamespace is { Name: "System" } system
        && system.ContainingNamespace is { IsGlobalNamespace: true };

    /// <summary>What of one type is nondeterministic, and under which diagnostic.</summary>
    private sealed class TypeRule(DiagnosticDescriptor descriptor)
    {
        public DiagnosticDescriptor Descriptor { get; } = descriptor;

        public bool Construction { get; init; }

        /// <summary>Only the constructors whose first parameter is a file path.</summary>
        public bool PathConstruction { get; init; }

        public bool AllStatic { get; init; }

        public bool AllInstance { get; init; }

        public string[] StaticMembers { get; init; } = [];

        public string[] InstanceMembers { get; init; } = [];
    }
}
