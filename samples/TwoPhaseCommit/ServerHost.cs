using Dse.Samples.Shared;
using Dse.Samples.TwoPhaseCommit.Wire;
using Dse.Services;
using Microsoft.AspNetCore.Builder;
using Microsoft.Extensions.DependencyInjection;

namespace Dse.Samples.TwoPhaseCommit;

/// <summary>
/// A committer or participant process: an ASP.NET gRPC server on 127.0.0.1 (TLS when the launcher passes a
/// certificate, <see cref="ClusterTls"/>) whose services are made speculative by
/// the DSE interceptor on behalf of its <see cref="SpeculativeLog"/>, connected to the DSE coordinator process.
/// </summary>
internal static class ServerHost
{
    /// <summary>The process modes this host serves.</summary>
    public const string Participant = "participant";

    /// <summary>The commit coordinator's mode.</summary>
    public const string Committer = "committer";

    /// <summary>
    /// Builds and starts the server for <paramref name="mode"/>; returns once the log is connected (and, for a
    /// participant, its index rebuilt), with the address it serves on.
    /// </summary>
    public static async Task<(WebApplication App, Uri Address)> StartAsync(string mode, ChildArguments args, CancellationToken cancellationToken)
    {
        string data = args.Get("data");
        var server = SampleServer.Create(args);
        var builder = server.Builder;
        var tls = server.Tls;
        server.AddGrpc();
        server.AddDse()
            .AddStateObject((_, options) => SampleServer.CreateLog(options, data))
            .AddGrpcInterceptors<SpeculativeLog>();

        if (mode == Participant)
        {
            builder.Services.AddSingleton<ParticipantIndex>();
        }
        else
        {
            var addresses = args.Get("participants").Split(',').Select(a => new Uri(a)).ToArray();
            builder.Services.AddSingleton(sp => new DseClients<Participant.ParticipantClient>(addresses, tls?.LoadAuthority(), sp.GetRequiredService<Dse.Grpc.DseClientInterceptor>(), invoker => new Participant.ParticipantClient(invoker)));
            builder.Services.AddSingleton<InFlightCommits>();
        }

        var app = server.Build();
        if (mode == Participant)
        {
            app.MapGrpcService<ParticipantService>();
        }
        else
        {
            app.MapGrpcService<CommitterService>();
        }

        await app.StartAsync(cancellationToken);
        await app.Services.GetRequiredService<Dse.Hosting.IDseReadiness>().WhenReadyAsync(cancellationToken);
        if (mode == Participant)
        {
            await app.Services.GetRequiredService<ParticipantIndex>().RebuildAsync(app.Services.GetRequiredService<SpeculativeLog>(), cancellationToken);
        }

        return (app, server.Address);
    }
}
