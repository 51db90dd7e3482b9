using System.Buffers.Binary;
using Dse.Grpc;
using Dse.Samples.TwoPhaseCommit.Wire;
using Grpc.Core;

namespace Dse.Samples.TwoPhaseCommit;

/// <summary>
/// The <c>--forge</c> check: in the middle of the measured load, every participant receives a Begin for a transaction
/// no client uses, once with each kind of forged DSE header (docs/libdse.md, "Header rules"). The implausible kinds
/// must be refused with INVALID_ARGUMENT and change nothing; the plausible one (a near-future version of the committer)
/// is accepted, and must not hold the participant's versions: the run goes on to commit every transaction.
/// </summary>
internal static class ForgedHeaders
{
    /// <summary>The first transaction id the check uses; the load's ids stay far below it.</summary>
    public const long FirstTransaction = 1L << 40;

    private static readonly TimeSpan CallTimeout = TimeSpan.FromSeconds(30);

    /// <summary>Each kind, its header bytes, and the status a participant must answer.</summary>
    public static IReadOnlyList<(string Kind, byte[] Header, StatusCode Expected)> Kinds { get; } =
    [
        ("negative-id", WithObjectId(DseHeader.FromOrigin(LocalCluster.CommitterId, 0, 1).ToArray(), -5), StatusCode.InvalidArgument),
        ("unknown-participant", DseHeader.FromOrigin(9_999, 0, 1).ToArray(), StatusCode.InvalidArgument),
        ("far-future-version", DseHeader.FromOrigin(LocalCluster.CommitterId, 0, 1L << 60).ToArray(), StatusCode.InvalidArgument),
        ("future-world-line", DseHeader.FromOrigin(LocalCluster.CommitterId, 1_000, 1).ToArray(), StatusCode.InvalidArgument),
        ("near-future-version", DseHeader.FromOrigin(LocalCluster.CommitterId, 0, 5_000).ToArray(), StatusCode.OK),
    ];

    /// <summary>Sends every kind to every participant; returns what each answered, as "kind@participant-i: STATUS".</summary>
    public static async Task<IReadOnlyList<ForgedHeaderOutcome>> SendAsync(IReadOnlyList<Participant.ParticipantClient> participants, CancellationToken cancellationToken)
    {
        var outcomes = new List<ForgedHeaderOutcome>();
        long transaction = FirstTransaction;
        for (int p = 0; p < participants.Count; p++)
        {
            foreach (var (kind, header, expected) in Kinds)
            {
                var metadata = new Metadata { { DseMetadata.HeaderKey, header } };
                StatusCode status;
                try
                {
                    await participants[p].BeginAsync(new TransactionRequest { Transaction = transaction++ }, metadata, DateTime.UtcNow + CallTimeout, cancellationToken);
                    status = StatusCode.OK;
                }
                catch (RpcException ex)
                {
                    status = ex.StatusCode;
                }

                outcomes.Add(new ForgedHeaderOutcome(kind, p, expected, status));
            }
        }

        return outcomes;
    }

    private static byte[] WithObjectId(byte[] origin, long objectId)
    {
        BinaryPrimitives.WriteInt64LittleEndian(origin.AsSpan(DseHeader.PrefixLength), objectId);
        return origin;
    }
}

/// <summary>What one participant answered to one kind of forged header.</summary>
/// <param name="Kind">The kind of forgery.</param>
/// <param name="Participant">The participant's index.</param>
/// <param name="Expected">The status the header rules call for.</param>
/// <param name="Actual">The status the participant answered.</param>
public sealed record ForgedHeaderOutcome(string Kind, int Participant, StatusCode Expected, StatusCode Actual)
{
    /// <summary>Whether the participant answered as the header rules call for.</summary>
    public bool AsExpected => Expected == Actual;
}
