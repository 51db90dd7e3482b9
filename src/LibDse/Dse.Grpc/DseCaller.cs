namespace Dse.Grpc;

/// <summary>An authenticated caller (<see cref="DseCredentials.Authenticate"/>): the participants its token speaks for, or an operator.</summary>
public sealed class DseCaller
{
    private readonly long[] _participantIds;

    internal DseCaller(long[] participantIds, string? operatorName)
    {
        Array.Sort(participantIds);
        _participantIds = participantIds;
        OperatorName = operatorName;
    }

    /// <summary>The operator's name from the participants file, or <c>null</c> for a participant's token.</summary>
    public string? OperatorName { get; }

    /// <summary>Whether the token is an operator's.</summary>
    public bool IsOperator => OperatorName is not null;

    /// <summary>The participant ids the token speaks for, ascending; empty for an operator.</summary>
    public IReadOnlyList<long> ParticipantIds => _participantIds;

    /// <summary>Whether the token speaks for participant <paramref name="objectId"/>.</summary>
    public bool SpeaksFor(long objectId) => Array.BinarySearch(_participantIds, objectId) >= 0;

    /// <summary>The caller as messages and logs name it: <c>operator NAME</c> or <c>participant 1</c> / <c>participants 1, 2</c>.</summary>
    public override string ToString() =>
        IsOperator ? $"operator {OperatorName}"
        : _participantIds.Length == 1 ? $"participant {_participantIds[0]}"
        : $"participants {string.Join(", ", _participantIds)}";
}
