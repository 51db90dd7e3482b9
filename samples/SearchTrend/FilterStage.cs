namespace Dse.Samples.SearchTrend;

/// <summary>Drops stop-word events and forwards the rest, and every watermark, to the count stage. No state.</summary>
public sealed class FilterStage : IStageLogic
{
    public bool HasState => false;

    public void Load(string state)
    {
    }

    public void Apply(string input, List<(string Destination, string Payload)> outputs)
    {
        string[] parts = input.Split(' ');
        if (parts[0] == "W" || !SearchInput.IsStopWord(parts[1]))
        {
            outputs.Add(("count", input));
        }
    }

    public string Save() => "";
}
