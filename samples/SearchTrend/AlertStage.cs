namespace Dse.Samples.SearchTrend;

/// <summary>Keeps every window's counts and an alert per term counted more than the threshold in a window.</summary>
public sealed class AlertStage(int threshold) : IStageLogic
{
    public AlertState State { get; private set; } = new();

    public bool HasState => true;

    public void Load(string state) => State = AlertState.Parse(state);

    public void Apply(string input, List<(string Destination, string Payload)> outputs) => State.Apply(input, threshold);

    public string Save() => State.ToString();
}
