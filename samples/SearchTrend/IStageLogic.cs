namespace Dse.Samples.SearchTrend;

/// <summary>
/// What one stage does with one input message: a pure function of its state and the message, which the stage's DARQ
/// processor runs inside a step (consuming the message and the previous state, writing the new state as a SELF
/// message and the outputs as OUT messages, all or nothing).
/// </summary>
public interface IStageLogic
{
    /// <summary>Whether the stage keeps state (as one SELF message).</summary>
    bool HasState { get; }

    /// <summary>Restores the state from its SELF message (a replay after a restart).</summary>
    void Load(string state);

    /// <summary>Applies one input; adds the messages to send to <paramref name="outputs"/> as (destination, payload).</summary>
    void Apply(string input, List<(string Destination, string Payload)> outputs);

    /// <summary>The state, as its SELF message.</summary>
    string Save();
}
