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
        var options = services.GetRequiredService<IOptions<DseHostingOptions>>().Value;
        var address = options.ParseCoordinator();
        return address is null ? InProcess(services) : new GrpcCoordinatorClient(address, ClientOptions(null, options));
    }

    /// <summary>
    /// <paramref name="given"/>, or the defaults, with <see cref="DseHostingOptions.CoordinatorCa"/> when they name no CA
    /// themselves and <see cref="DseHostingOptions.CoordinatorToken"/> or <see cref="DseHostingOptions.CoordinatorTokenFile"/>
    /// when they carry no token; <paramref name="given"/> is not changed.
    /// </summary>
    public static GrpcCoordinatorClientOptions? ClientOptions(GrpcCoordinatorClientOptions? given, DseHostingOptions options)
    {
        bool addCa = options.CoordinatorCa is not null && given?.CertificateAuthority is null && given?.CertificateAuthorityPath is null;
        bool addToken = (options.CoordinatorToken is not null || options.CoordinatorTokenFile is not null) && given?.Token is null && given?.TokenPath is null;
        if (!addCa && !addToken)
        {
            return given;
        }

        var defaults = new GrpcCoordinatorClientOptions();
        return new GrpcCoordinatorClientOptions
        {
            CallTimeout = given?.CallTimeout ?? defaults.CallTimeout,
            ConnectTimeout = given?.ConnectTimeout ?? defaults.ConnectTimeout,
            LongPollWait = given?.LongPollWait ?? defaults.LongPollWait,
            MaxMessageSize = given?.MaxMessageSize ?? defaults.MaxMessageSize,
            CertificateAuthority = addCa ? null : given?.CertificateAuthority,
            CertificateAuthorityPath = addCa ? options.CoordinatorCa : given?.CertificateAuthorityPath,
            Token = addToken ? options.CoordinatorToken : given?.Token,
            TokenPath = addToken ? options.CoordinatorTokenFile : given?.TokenPath,
        };
    }

    /// <summary>
    /// A coordinator in this process; it never removes a silent participant (they share its process). It expects
    /// <see cref="DseHostingOptions.ExpectedParticipants"/>, by default the registered StateObjects, so that a restart
    /// after a crash restores a consistent cut instead of each StateObject's latest version.
    /// </summary>
    public static ClusterCoordinator InProcess(IServiceProvider services) => new(new ClusterCoordinatorOptions
    {
        ExpectedParticipants = ExpectedParticipants(services),
        LoggerFactory = services.GetService<ILoggerFactory>(),
        TimeProvider = services.GetService<TimeProvider>() ?? TimeProvider.System,
    });

    /// <summary>The ids the in-process coordinator waits for at start; <c>null</c> (none) when nothing is registered.</summary>
    public static IReadOnlyCollection<long>? ExpectedParticipants(IServiceProvider services)
    {
        var options = services.GetRequiredService<IOptions<DseHostingOptions>>().Value;
        if (options.ExpectedParticipants is { } expected)
        {
            return expected;
        }

        var registry = services.GetRequiredService<DseRegistry>();
        var ids = new List<long>(registry.StateObjects.Count);
        foreach (var registration in registry.StateObjects)
        {
            ids.Add(registration.EffectiveId(options));
        }

        return ids.Count == 0 ? null : ids;
    }

    public static string Describe(IDseCoordinator coordinator) => coordinator switch
    {
        GrpcCoordinatorClient remote => remote.Target,
        ClusterCoordinator => DseHostingOptions.InProcessCoordinator,
        _ => coordinator.GetType().Name,
    };
}
