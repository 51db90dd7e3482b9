using System.Globalization;

namespace Dse.Samples.SearchTrend;

/// <summary>
/// The source's input, and the result the pipeline must reach: seeded search events ("E term time"), one per time unit,
/// with a watermark ("W window") after each window of them.
/// </summary>
public static class SearchInput
{
    private static readonly string[] Terms = ["darq", "faster", "crest", "the", "a", "azure", "dotnet", "queue", "log", "step"];
    private static readonly int[] Weights = [25, 15, 12, 12, 8, 8, 6, 6, 4, 4];

    /// <summary>Terms the filter drops.</summary>
    public static bool IsStopWord(string term) => term is "the" or "a";

    /// <summary>The input of <paramref name="windows"/> windows of <paramref name="windowSize"/> events, each window's events followed by its watermark.</summary>
    public static List<List<string>> Windows(int seed, int windows, int windowSize)
    {
        var random = new Random(seed);
        int total = Weights.Sum();
        var input = new List<List<string>>(windows);
        for (int window = 0; window < windows; window++)
        {
            var lines = new List<string>(windowSize + 1);
            for (int i = 0; i < windowSize; i++)
            {
                int pick = random.Next(total);
                int term = 0;
                while (pick >= Weights[term])
                {
                    pick -= Weights[term++];
                }

                lines.Add(string.Create(CultureInfo.InvariantCulture, $"E {Terms[term]} {(window * windowSize) + i}"));
            }

            lines.Add(string.Create(CultureInfo.InvariantCulture, $"W {window}"));
            input.Add(lines);
        }

        return input;
    }

    /// <summary>What the alert stage must hold at the end, computed straight from the input, with no DARQ involved.</summary>
    public static AlertState Expected(IEnumerable<IEnumerable<string>> windows, int threshold)
    {
        var count = new CountStage();
        var alert = new AlertState();
        var sent = new List<(string, string)>();
        foreach (var line in windows.SelectMany(w => w))
        {
            string[] parts = line.Split(' ');
            if (parts[0] == "E" && IsStopWord(parts[1]))
            {
                continue;
            }

            sent.Clear();
            count.Apply(line, sent);
            foreach (var (_, summary) in sent)
            {
                alert.Apply(summary, threshold);
            }
        }

        return alert;
    }
}
