using System.Globalization;
using System.Text;

namespace Dse.Samples.SearchTrend;

/// <summary>The alert stage's state: the window summaries ("k term=c;...") in order, and the alerts they raised.</summary>
public sealed class AlertState
{
    public List<string> Windows { get; } = [];

    public List<string> Alerts { get; } = [];

    public void Apply(string summary, int threshold)
    {
        Windows.Add(summary);
        int space = summary.IndexOf(' ', StringComparison.Ordinal);
        string window = summary[..space];
        foreach (var pair in summary[(space + 1)..].Split(';', StringSplitOptions.RemoveEmptyEntries))
        {
            int equals = pair.IndexOf('=', StringComparison.Ordinal);
            if (int.Parse(pair.AsSpan(equals + 1), CultureInfo.InvariantCulture) > threshold)
            {
                Alerts.Add($"window {window}: {pair[..equals]} x{pair[(equals + 1)..]}");
            }
        }
    }

    public bool SameAs(AlertState other) => Windows.SequenceEqual(other.Windows) && Alerts.SequenceEqual(other.Alerts);

    public override string ToString()
    {
        var text = new StringBuilder();
        foreach (var window in Windows)
        {
            text.Append("W\t").Append(window).Append('\n');
        }

        foreach (var alert in Alerts)
        {
            text.Append("A\t").Append(alert).Append('\n');
        }

        return text.ToString();
    }

    public static AlertState Parse(string text)
    {
        var state = new AlertState();
        foreach (var line in text.Split('\n', StringSplitOptions.RemoveEmptyEntries))
        {
            (line[0] == 'W' ? state.Windows : state.Alerts).Add(line[2..]);
        }

        return state;
    }
}
