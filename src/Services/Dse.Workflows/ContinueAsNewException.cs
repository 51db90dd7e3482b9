namespace Dse.Workflows;

/// <summary>
/// Thrown by workflow code (<c>throw ctx.ContinueAsNew(input)</c>) to end the current run and start a fresh one of the
/// same workflow with <see cref="Input"/>: the new run replays from an empty history. Do not catch it.
/// </summary>
public sealed class ContinueAsNewException : Exception
{
    internal ContinueAsNewException(ReadOnlyMemory<byte> input)
        : base("The workflow continues as new.")
    {
        Input = input;
    }

    /// <summary>The new run's input, serialized.</summary>
    public ReadOnlyMemory<byte> Input { get; }
}
