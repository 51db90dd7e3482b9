using Dse.Grpc;
using Dse.Samples.TwoPhaseCommit.Wire;
using Grpc.Core;

namespace Dse.Samples.TwoPhaseCommit;

/// <summary>
/// The bind methods the services name with <see cref="BindServiceMethodAttribute"/>: the generated bindings, with request
/// bytes that do not parse answered INVALID_ARGUMENT (<see cref="DseRequestParsing"/>, docs/grpc.md).
/// </summary>
internal static class TwoPhaseCommitBindings
{
    public static void BindParticipant(ServiceBinderBase binder, Participant.ParticipantBase? service) =>
        Participant.BindService(DseRequestParsing.RefusingUnparseable(binder), service);

    public static void BindCommitter(ServiceBinderBase binder, Committer.CommitterBase? service) =>
        Committer.BindService(DseRequestParsing.RefusingUnparseable(binder), service);
}
