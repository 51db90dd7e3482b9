namespace Dse.Darq;

/// <summary>Options of a <see cref="DarqActivityRunner"/>; validated when it is created.</summary>
public sealed class DarqActivityRunnerOptions
{
    /// <summary>The handler of each activity name (ordinal). Required, at least one.</summary>
    public IDictionary<string, DarqActivityHandler> Handlers { get; } = new Dictionary<string, DarqActivityHandler>(StringComparer.Ordinal);

    /// <summary>Builds the completion step of a finished activity. Required.</summary>
    public DarqActivityCompleter? Completer { get; set; }

    /// <summary>The first delay before retrying a failed handler; it doubles per failure. Default 10 ms.</summary>
    public TimeSpan RetryMinDelay { get; set; } = TimeSpan.FromMilliseconds(10);

    /// <summary>The longest delay between retries of a handler. Default 5 s; at least <see cref="RetryMinDelay"/>.</summary>
    public TimeSpan RetryMaxDelay { get; set; } = TimeSpan.FromSeconds(5);

    /// <summary>The clock of the retry delays. Default <see cref="TimeProvider.System"/>.</summary>
    public TimeProvider TimeProvider { get; set; } = TimeProvider.System;

    internal void Validate()
    {
        if (Handlers.Count == 0)
        {
            throw new ArgumentException("DarqActivityRunnerOptions.Handlers must hold at least one activity handler.", nameof(Handlers));
        }

        foreach (var (name, handler) in Handlers)
        {
            if (string.IsNullOrEmpty(name) || handler is null)
            {
                throw new ArgumentException($"DarqActivityRunnerOptions.Handlers holds an empty name or a null handler ('{name}').", nameof(Handlers));
            }
        }

        if (Completer is null)
        {
            throw new ArgumentException("DarqActivityRunnerOptions.Completer is required.", nameof(Completer));
        }

        if (RetryMinDelay <= TimeSpan.Zero || RetryMaxDelay < RetryMinDelay)
        {
            throw new ArgumentOutOfRangeException(nameof(RetryMinDelay), RetryMinDelay,
                $"Activity retry delays must be positive, the maximum ({RetryMaxDelay}) at least the minimum.");
        }

        ArgumentNullException.ThrowIfNull(TimeProvider);
    }
}
