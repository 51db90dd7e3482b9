using System.Globalization;

namespace Dse.Samples.SearchTrend;

/// <summary>Counts the terms of the open window; on its watermark, sends the window's counts to the alert stage.</summary>
public sealed class CountStage : IStageLogic
{
    private readonly SortedDictionary<string, int> _counts = new(StringComparer.Ordinal);

    public bool HasState => true;

    public void Load(string state)
    {
        _counts.Clear();
        foreach (var pair in state.Split(';', StringSplitOptions.RemoveEmptyEntries))
        {
            int equals = pair.IndexOf('=', StringComparison.Ordinal);
            _counts[pair[..equals]] = int.Parse(pair.AsSpan(equals + 1), CultureInfo.InvariantCulture);
        }
    }

    public void Apply(string input, List<(string Destination, string Payload)> outputs)
    {
        string[] parts = input.Split(' ');
        if (parts[0] == "E")
        {
            _counts[parts[1]] = _counts.GetValueOrDefault(parts[1]) + 1;
            return;
        }

        // "W k": the window is closed.
        outputs.Add(("alert", $"{parts[1]} {Save()}"));
        _counts.Clear();
    }

    public string Save() => string.Join(';', _counts.Select(p => string.Create(CultureInfo.InvariantCulture, $"{p.Key}={p.Value}")));
}
