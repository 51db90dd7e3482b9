using System.Security.Cryptography.X509Certificates;
using Dse.Grpc;
using Dse.Samples.TwoPhaseCommit.Wire;
using Grpc.Core.Interceptors;
using Grpc.Net.Client;

namespace Dse.Samples.TwoPhaseCommit;

/// <summary>
/// The committer's clients of the participants. Calls go through <see cref="DseClientInterceptor"/>, so a call made
/// inside a commit handler carries the committer's state and receives the participant's reply header into it.
/// </summary>
internal sealed class ParticipantClients : IDisposable
{
    private readonly GrpcChannel[] _channels;

    public ParticipantClients(IReadOnlyList<Uri> addresses, X509Certificate2? authority, DseClientInterceptor interceptor)
    {
        _channels = new GrpcChannel[addresses.Count];
        Clients = new Participant.ParticipantClient[addresses.Count];
        for (int i = 0; i < addresses.Count; i++)
        {
            _channels[i] = Channels.Create(addresses[i], authority);
            Clients[i] = new Participant.ParticipantClient(_channels[i].Intercept(interceptor));
        }
    }

    /// <summary>One client per participant, in participant order.</summary>
    public Participant.ParticipantClient[] Clients { get; }

    /// <inheritdoc />
    public void Dispose()
    {
        foreach (var channel in _channels)
        {
            channel.Dispose();
        }
    }
}
