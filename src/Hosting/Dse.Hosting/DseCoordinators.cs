using Dse.Coordinator.Client;
using Microsoft.Extensions.DependencyInjection;
using Microsoft.Extensions.Logging;
using Microsoft.Extensions.Options;

namespace Dse.Hosting;

/// <summary>Builds the coordinator the hosting options name, and names a coordinator in logs and health reports.</summary>
internal static class DseCoordinators
{
    /// <summary>The coordinator <see cref="DseHostingOptions.Coordinator"/> names; the service provider owns (disposes) it.</summary>
    public static IDseCoordinator FromOptions(IServiceProvider services)
    {
        var address = services.GetRequiredService<IOptions<DseHostingOptions>>().Value.ParseCoordinator();
        return address is null ? InProcess(services) : new GrpcCoordinatorClient(address);
    }

    /// <summary>A coordinator in this process; it never removes a silent participant (they share its process).</summary>
    public static ClusterCoordinator InProcess(IServiceProvider services) => new(new ClusterCoordinatorOptions
    {
        LoggerFactory = services.GetService<ILoggerFactory>(),
        TimeProvider = services.GetService<TimeProvider>() ?? TimeProvider.System,
    });

    public static string Describe(IDseCoordinator coordinator) => coordinator switch
    {
        GrpcCoordinatorClient remote => remote.Target,
        ClusterCoordinator => DseHostingOptions.InProcessCoordinator,
        _ => coordinator.GetType().Name,
    };
}
