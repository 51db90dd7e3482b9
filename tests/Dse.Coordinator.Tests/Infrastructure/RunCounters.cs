namespace Dse.Coordinator.Tests.Infrastructure;

/// <summary>What happened over a <see cref="CrashTestCluster"/> run, summed over participants and their incarnations.</summary>
/// <param name="Sent">Events the participants generated and sent.</param>
/// <param name="Routed">Messages delivered to a running participant's input.</param>
/// <param name="Dropped">Messages addressed to a participant that was down.</param>
/// <param name="Discarded">Delivered messages the receiver discarded as coming from lost state.</param>
/// <param name="Exposes">Barriers passed, each followed by an EXPOSED line.</param>
/// <param name="Withheld">Barriers that threw because what they observed was rolled back.</param>
/// <param name="ParticipantStarts">Participant processes started, restarts included.</param>
/// <param name="CoordinatorStarts">Coordinator host processes started, restarts included.</param>
public sealed record RunCounters(int Sent, int Routed, int Dropped, int Discarded, int Exposes, int Withheld, int ParticipantStarts, int CoordinatorStarts);
