namespace Dse.Functions.Engine;

/// <summary>
/// What a part of a transaction's call graph reports upward with its reply or returned credit: its first failure in
/// <see cref="CallOrder.CompareFailures"/> order, a conflicting access to one entity, and (in the fallback phase)
/// whether it touched a key outside the transaction's first read/write set. Merging is order-independent, so the root
/// ends with the same signals whatever order the parts came back in.
/// </summary>
internal struct TxSignals
{
    public CallNode? FailureNode;
    public EntityAbort? Failure;
    public EntityAbort? Race;
    public bool Diverged;

    public readonly bool Failed => Failure is not null || Race is not null;

    /// <summary>The abort the transaction reports: a conflicting access first (it made the rest depend on timing), then the first failure.</summary>
    public readonly EntityAbort? Abort => Race ?? Failure;

    public void AddFailure(CallNode node, EntityAbort abort)
    {
        if (Failure is null || CallOrder.CompareFailures(node, FailureNode!) < 0)
        {
            FailureNode = node;
            Failure = abort;
        }
    }

    public void AddRace(EntityAbort race)
    {
        // Of several conflicts, the one reported is the least by its text, whatever the order they were found in.
        if (Race is null || string.CompareOrdinal(race.Message, Race.Message) < 0)
        {
            Race = race;
        }
    }

    public void Merge(in TxSignals other)
    {
        if (other.Failure is not null)
        {
            AddFailure(other.FailureNode!, other.Failure);
        }

        if (other.Race is not null)
        {
            AddRace(other.Race);
        }

        Diverged |= other.Diverged;
    }
}
