using Dse.Services;
using Microsoft.Extensions.DependencyInjection;
using Microsoft.Extensions.Logging;

namespace Dse.Workflows.Grpc;

/// <summary>What <c>AddDseWorkflows</c> calls collected, in order; one per service collection, filled before the host is built.</summary>
internal sealed class WorkflowsHostingSetup
{
    /// <summary>The callbacks that register workflow types.</summary>
    public List<Action<WorkflowRegistry>> Registrations { get; } = [];

    /// <summary>The callbacks that set engine options, after the host's clock and logger factory.</summary>
    public List<Action<WorkflowEngineOptions>> Configurations { get; } = [];

    /// <summary>The setup <c>AddDseWorkflows</c> put into <paramref name="services"/>, or <c>null</c> before it was called.</summary>
    public static WorkflowsHostingSetup? Find(IServiceCollection services)
    {
        foreach (var descriptor in services)
        {
            if (descriptor.ServiceType == typeof(WorkflowsHostingSetup) && !descriptor.IsKeyedService)
            {
                return descriptor.ImplementationInstance as WorkflowsHostingSetup;
            }
        }

        return null;
    }

    /// <summary>
    /// Builds the engine over the one <see cref="SpeculativeLog"/> registered with <c>AddStateObject</c>, the host's
    /// <see cref="TimeProvider"/> and logger factory, then the callbacks.
    /// </summary>
    /// <exception cref="InvalidOperationException">No SpeculativeLog is registered, or several are; the message says how to fix it.</exception>
    public WorkflowEngine CreateEngine(IServiceProvider services)
    {
        var logs = services.GetServices<SpeculativeLog>().ToList();
        if (logs.Count != 1)
        {
            throw new InvalidOperationException(logs.Count == 0
                ? "AddDseWorkflows keeps the workflows' history in a SpeculativeLog, but none is registered. Add one on the builder AddDse returns: "
                  + ".AddStateObject((services, options) => new SpeculativeLog(options, new SpeculativeLogOptions { ... }))."
                : $"AddDseWorkflows keeps the workflows' history in the host's SpeculativeLog, but {logs.Count} are registered; a host with workflows registers exactly one.");
        }

        var registry = new WorkflowRegistry();
        foreach (var register in Registrations)
        {
            register(registry);
        }

        var options = new WorkflowEngineOptions
        {
            TimeProvider = services.GetService<TimeProvider>() ?? TimeProvider.System,
            LoggerFactory = services.GetService<ILoggerFactory>(),
        };
        foreach (var configure in Configurations)
        {
            configure(options);
        }

        return new WorkflowEngine(logs[0], registry, options);
    }
}
