using Dse.Coordinator.Client;
using Dse.Testing;
using Google.Protobuf;
using Google.Protobuf.WellKnownTypes;
using Grpc.AspNetCore.Server.Model;
using Grpc.Core;
using Microsoft.AspNetCore.Builder;
using Microsoft.Extensions.DependencyInjection;
using Wire = Dse.Coordinator.Grpc;

namespace Dse.Coordinator.Tests;

/// <summary>
/// <see cref="GrpcCoordinatorClient.InspectAsync"/> against a peer that answers Inspect with bytes of its choosing: an
/// answer that breaks the wire contract is a peer this client cannot use (Unavailable, naming the field), never a view
/// with impossible values.
/// </summary>
public sealed class GrpcCoordinatorClientInspectAnswerTests
{
    public static TheoryData<string, string> MalformedAnswers => new()
    {
        { "duplicate", "InspectResponse.participants lists participant 1 twice" },
        { "negative", "InspectResponse.participants[0] has a negative id, version, world-line or count" },
        { "no-since-heard", "InspectResponse.participants[0].since_heard is missing or invalid" },
        { "statistics-broken", "InspectResponse.participants[0].statistics: queues[0] ('q') has a negative depth" },
        { "statistics-without-age", "InspectResponse.participants[0].statistics_age is missing or invalid" },
        { "decision-missing", "InspectResponse.decisions[0].decision is missing" },
        { "decision-reason", "InspectResponse.decisions[0].decision.reason is Unspecified" },
    };

    [Theory]
    [MemberData(nameof(MalformedAnswers))]
    public async Task InspectAsync_MalformedAnswer_UnavailableNamingTheField(string answer, string problem)
    {
        await using var peer = await StartPeerAsync(Answer(answer).ToByteArray());
        using var client = new GrpcCoordinatorClient(peer.Channel);

        var error = await Assert.ThrowsAsync<DseCoordinatorException>(() => client.InspectAsync());

        Assert.Equal(CoordinatorErrorCode.Unavailable, error.Code);
        Assert.Contains("malformed answer", error.Message, StringComparison.Ordinal);
        Assert.Contains(problem, error.Message, StringComparison.Ordinal);
    }

    [Fact]
    public async Task InspectAsync_WellFormedAnswer_ReadAsSent()
    {
        await using var peer = await StartPeerAsync(Answer("good").ToByteArray());
        using var client = new GrpcCoordinatorClient(peer.Channel);

        var view = await client.InspectAsync();

        var participant = Assert.Single(view.Participants);
        Assert.Equal(TimeSpan.FromSeconds(2), participant.SinceHeard);
        Assert.Equal(TimeSpan.FromMilliseconds(300), participant.StatisticsAge);
        Assert.Equal(new QueueStatistics("q", 1, 0, 0), Assert.Single(participant.Statistics!.Queues));
        Assert.Null(view.Fault);
        Assert.Empty(view.Decisions);
    }

    private static Wire.InspectResponse Answer(string kind)
    {
        var statistics = new Wire.ParticipantStatistics
        {
            CurrentVersion = 3,
            BarrierWaits = new Wire.BarrierWaitDistribution { UpperBoundsMs = { 1 }, Counts = { 0, 0 } },
            Queues = { new Wire.QueueStatistics { Name = "q", Unconsumed = 1 } },
        };
        var participant = new Wire.ParticipantView
        {
            ObjectId = 1,
            Committed = 2,
            Persisted = 3,
            SinceHeard = Duration.FromTimeSpan(TimeSpan.FromSeconds(2)),
            Statistics = statistics,
            StatisticsAge = Duration.FromTimeSpan(TimeSpan.FromMilliseconds(300)),
        };
        var response = new Wire.InspectResponse { Incarnation = 1, Epoch = 1L << 32, Participants = { participant } };
        switch (kind)
        {
            case "duplicate":
                response.Participants.Add(participant.Clone());
                break;
            case "negative":
                participant.Committed = -1;
                break;
            case "no-since-heard":
                participant.SinceHeard = null;
                break;
            case "statistics-broken":
                statistics.Queues[0].InSpilled = -5;
                break;
            case "statistics-without-age":
                participant.StatisticsAge = null;
                break;
            case "decision-missing":
                response.Decisions.Add(new Wire.DecisionView());
                break;
            case "decision-reason":
                response.Decisions.Add(new Wire.DecisionView { Decision = new Wire.RollbackDecision { WorldLine = 1 } });
                break;
        }

        return response;
    }

    private static Task<LoopbackGrpcServer> StartPeerAsync(byte[] answer) =>
        LoopbackGrpcServer.StartAsync(
            app => app.MapGrpcService<CannedInspect>(),
            services => services
                .AddSingleton(new CannedInspect(answer))
                .AddSingleton<IServiceMethodProvider<CannedInspect>, CannedInspectMethods>());

    /// <summary>A peer on the coordinator's service name whose Inspect answers the same bytes to every call.</summary>
    private sealed class CannedInspect(byte[] answer)
    {
        public byte[] Answer => answer;
    }

    private sealed class CannedInspectMethods : IServiceMethodProvider<CannedInspect>
    {
        private static readonly Marshaller<byte[]> Bytes = Marshallers.Create(static b => b, static b => b);

        public void OnServiceMethodDiscovery(ServiceMethodProviderContext<CannedInspect> context) =>
            context.AddUnaryMethod(
                new Method<byte[], byte[]>(MethodType.Unary, "dse.coordinator.v1.Coordinator", "Inspect", Bytes, Bytes),
                [],
                static (service, _, _) => Task.FromResult(service.Answer));
    }
}
