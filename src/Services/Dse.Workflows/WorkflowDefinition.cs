using System.Text.Json;

namespace Dse.Workflows;

/// <summary>A registered workflow type: how to run it on serialized input, and how to check an input before it is recorded.</summary>
/// <param name="Type">The type's name.</param>
/// <param name="InputType">The input's CLR type.</param>
/// <param name="RunAsync">Runs the workflow on serialized input and returns the serialized result.</param>
/// <param name="CheckInput">Throws <see cref="JsonException"/> if the input does not deserialize.</param>
internal sealed record WorkflowDefinition(
    string Type,
    Type InputType,
    Func<WorkflowContext, ReadOnlyMemory<byte>, JsonSerializerOptions, Task<byte[]>> RunAsync,
    Action<ReadOnlyMemory<byte>, JsonSerializerOptions> CheckInput);
