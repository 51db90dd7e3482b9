using System.Text.Json;

namespace Dse.Workflows;

/// <summary>The workflow types an engine can run, by name. Register every type before the engine starts.</summary>
public sealed class WorkflowRegistry
{
    private readonly Dictionary<string, WorkflowDefinition> _definitions = new(StringComparer.Ordinal);

    /// <summary>
    /// Registers <paramref name="workflow"/> as <paramref name="type"/>. The method is the workflow: it must be
    /// deterministic (docs/workflows.md, "Rules for workflow code").
    /// </summary>
    /// <exception cref="ArgumentException">The name is empty or taken.</exception>
    public WorkflowRegistry Register<TInput, TResult>(string type, Func<WorkflowContext, TInput, Task<TResult>> workflow)
    {
        ArgumentException.ThrowIfNullOrWhiteSpace(type);
        ArgumentNullException.ThrowIfNull(workflow);
        if (!_definitions.TryAdd(type, new WorkflowDefinition(
            type,
            typeof(TInput),
            async (context, input, serializer) =>
            {
                var value = JsonSerializer.Deserialize<TInput>(input.Span, serializer)!;
                var result = await workflow(context, value);
                return JsonSerializer.SerializeToUtf8Bytes(result, serializer);
            },
            (input, serializer) => _ = JsonSerializer.Deserialize<TInput>(input.Span, serializer))))
        {
            throw new ArgumentException($"A workflow type '{type}' is registered already.", nameof(type));
        }

        return this;
    }

    /// <summary>The registered type names.</summary>
    public IReadOnlyCollection<string> Types => _definitions.Keys;

    internal bool TryGet(string type, out WorkflowDefinition definition) => _definitions.TryGetValue(type, out definition!);
}
