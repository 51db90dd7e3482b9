using System.Text.Json;
using Microsoft.Extensions.Logging;

namespace Dse.Workflows;

/// <summary>The engine's options.</summary>
public sealed class WorkflowEngineOptions
{
    /// <summary>The clock of timers, backoff and attempt timeouts, and of the timestamps <see cref="WorkflowContext.UtcNow"/> reads. Default: the system's.</summary>
    public TimeProvider TimeProvider { get; set; } = TimeProvider.System;

    /// <summary>How inputs, results and payloads are serialized. Default: <see cref="JsonSerializerOptions.Web"/>.</summary>
    public JsonSerializerOptions SerializerOptions { get; set; } = JsonSerializerOptions.Web;

    /// <summary>Attempts of steps that name no options of their own. Default: <see cref="StepOptions"/>' defaults.</summary>
    public StepOptions DefaultStepOptions { get; set; } = new();

    /// <summary>Attempts of compensations that name no options of their own. Default: 10 attempts, backoff up to 5 s.</summary>
    public StepOptions DefaultCompensationOptions { get; set; } = new() { MaxAttempts = 10, MaxBackoff = TimeSpan.FromSeconds(5) };

    /// <summary>Where the engine logs. Default: nowhere.</summary>
    public ILoggerFactory? LoggerFactory { get; set; }

    /// <summary>Throws if an option is invalid; the message names it.</summary>
    internal void Validate()
    {
        ArgumentNullException.ThrowIfNull(TimeProvider, nameof(TimeProvider));
        ArgumentNullException.ThrowIfNull(SerializerOptions, nameof(SerializerOptions));
        ArgumentNullException.ThrowIfNull(DefaultStepOptions, nameof(DefaultStepOptions));
        ArgumentNullException.ThrowIfNull(DefaultCompensationOptions, nameof(DefaultCompensationOptions));
        DefaultStepOptions.Validate();
        DefaultCompensationOptions.Validate();
    }
}
