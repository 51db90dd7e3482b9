namespace Dse.Workflows;

/// <summary>What <see cref="HistoryCodec.Decode"/> made of one log entry: an event, or what is wrong with it.</summary>
internal readonly record struct HistoryRecord(HistoryEvent? Event, string? WorkflowId, int Run, int Index, string? Problem)
{
    /// <summary>A well-formed event.</summary>
    public static HistoryRecord Valid(HistoryEvent e) => new(e, e.WorkflowId, e.Run, e.Index, null);

    /// <summary>An entry whose header is sound but whose body is not: the workflow it belongs to is known.</summary>
    public static HistoryRecord CorruptBody(string id, int run, int index, string problem) => new(null, id, run, index, problem);

    /// <summary>An entry nobody can be named as the owner of.</summary>
    public static HistoryRecord Unattributed(string problem) => new(null, null, 0, 0, problem);
}
