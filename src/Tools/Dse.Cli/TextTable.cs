using System.Text;

namespace Dse.Cli;

/// <summary>Lays out rows of cells as aligned columns for a person to read: each column as wide as its widest cell.</summary>
internal static class TextTable
{
    /// <summary>The rows as lines, each starting with <paramref name="indent"/>, columns two spaces apart, no trailing spaces.</summary>
    public static IEnumerable<string> Format(IReadOnlyList<string[]> rows, string indent)
    {
        int columns = rows.Count == 0 ? 0 : rows.Max(static r => r.Length);
        var widths = new int[columns];
        foreach (var row in rows)
        {
            for (int i = 0; i < row.Length; i++)
            {
                widths[i] = Math.Max(widths[i], row[i].Length);
            }
        }

        var line = new StringBuilder();
        foreach (var row in rows)
        {
            line.Clear().Append(indent);
            for (int i = 0; i < row.Length; i++)
            {
                line.Append(row[i]);
                if (i < row.Length - 1)
                {
                    line.Append(' ', widths[i] - row[i].Length + 2);
                }
            }

            yield return line.ToString();
        }
    }
}
