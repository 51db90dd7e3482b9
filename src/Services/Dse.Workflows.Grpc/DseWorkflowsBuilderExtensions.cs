using Dse.Hosting;
using Dse.Workflows;
using Dse.Workflows.Grpc;
using Microsoft.Extensions.DependencyInjection.Extensions;

namespace Microsoft.Extensions.DependencyInjection;

/// <summary>Hosts the workflow engine on the DSE runtime that <c>AddDse</c> set up.</summary>
public static class DseWorkflowsBuilderExtensions
{
    /// <summary>The name of the health check <see cref="AddDseWorkflows"/> registers: <c>dse-workflows</c>.</summary>
    public const string HealthCheckName = "dse-workflows";

    /// <summary>
    /// Adds the workflow engine: a <see cref="WorkflowEngine"/> singleton over the host's one
    /// <see cref="Dse.Services.SpeculativeLog"/> (registered with <c>AddStateObject</c>, before or after this call),
    /// with the workflow types <paramref name="register"/> registers, the host's <see cref="TimeProvider"/> and logger
    /// factory, then <paramref name="configure"/>; a hosted service that starts the engine once the DSE runtime
    /// connected the log (the host's start does not wait for it) and disposes it at stop, before the log is disposed;
    /// the health check <c>dse-workflows</c> (<see cref="HealthCheckName"/>: Degraded until the engine has loaded its
    /// history, Unhealthy if it could not start); the hosted <see cref="Dse.Grpc.DseClientInterceptor"/> singleton (with
    /// <c>Dse:Token</c>), for the clients that workflow steps call through; and gRPC, to serve the engine with
    /// <c>MapDseWorkflows()</c>. Calling
    /// it again adds more types and options to the same engine. The host's start fails if no SpeculativeLog is
    /// registered, or several are.
    /// </summary>
    /// <param name="builder">The DSE builder.</param>
    /// <param name="register">Registers the workflow types (<see cref="WorkflowRegistry.Register{TInput, TResult}"/>); runs once, when the engine is built.</param>
    /// <param name="configure">Sets engine options (serializer, step defaults, a clock of its own) after the host's defaults.</param>
    /// <returns>The builder.</returns>
    public static IDseBuilder AddDseWorkflows(this IDseBuilder builder, Action<WorkflowRegistry> register, Action<WorkflowEngineOptions>? configure = null)
    {
        ArgumentNullException.ThrowIfNull(builder);
        ArgumentNullException.ThrowIfNull(register);
        var services = builder.Services;
        var setup = WorkflowsHostingSetup.Find(services);
        if (setup is null)
        {
            setup = new WorkflowsHostingSetup();
            services.AddSingleton(setup);
            services.TryAddSingleton(static provider => provider.GetRequiredService<WorkflowsHostingSetup>().CreateEngine(provider));
            services.TryAddSingleton<WorkflowEngineHostedService>();
            services.AddHostedService(static provider => provider.GetRequiredService<WorkflowEngineHostedService>());
            services.AddHealthChecks().AddCheck<WorkflowEngineHealthCheck>(HealthCheckName);
            builder.AddDseClientInterceptor();
            services.AddGrpc();
        }

        setup.Registrations.Add(register);
        if (configure is not null)
        {
            setup.Configurations.Add(configure);
        }

        return builder;
    }
}
