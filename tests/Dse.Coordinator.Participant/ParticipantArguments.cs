using System.Globalization;

namespace Dse.Coordinator.Participant;

/// <summary>The participant's command line (see <see cref="Program"/>); every option is validated by <see cref="TryParse"/>.</summary>
internal sealed record ParticipantArguments(
    long Id,
    Uri Coordinator,
    string Directory,
    IReadOnlyList<long> Peers,
    int Seed,
    TimeSpan EventInterval,
    TimeSpan GroupCommitPeriod,
    TimeSpan ExposeInterval)
{
    public const string Usage =
        "usage: --id N --coordinator http://127.0.0.1:PORT --dir DIR --peers 1,2,3 [--seed N] [--interval-ms 10] [--group-commit-ms 20] [--expose-ms 250]";

    /// <summary>Parses <paramref name="args"/>; on failure <paramref name="error"/> says which option was wrong.</summary>
    public static bool TryParse(string[] args, out ParticipantArguments? arguments, out string error)
    {
        arguments = null;
        var values = new Dictionary<string, string>(StringComparer.Ordinal);
        for (int i = 0; i < args.Length; i += 2)
        {
            if (!args[i].StartsWith("--", StringComparison.Ordinal) || i + 1 >= args.Length)
            {
                error = $"expected '--option value' pairs, got '{args[i]}'";
                return false;
            }

            values[args[i][2..]] = args[i + 1];
        }

        if (!TryGetLong(values, "id", null, out long id, out error)
            || !TryGetLong(values, "seed", Environment.TickCount, out long seed, out error)
            || !TryGetLong(values, "interval-ms", 10, out long intervalMs, out error)
            || !TryGetLong(values, "group-commit-ms", 20, out long groupCommitMs, out error)
            || !TryGetLong(values, "expose-ms", 250, out long exposeMs, out error))
        {
            return false;
        }

        if (!values.TryGetValue("coordinator", out string? coordinatorText) || !Uri.TryCreate(coordinatorText, UriKind.Absolute, out var coordinator))
        {
            error = $"--coordinator must be an absolute URI (got '{coordinatorText}')";
            return false;
        }

        if (!values.TryGetValue("dir", out string? directory) || string.IsNullOrWhiteSpace(directory))
        {
            error = "--dir is required";
            return false;
        }

        var peers = new List<long>();
        foreach (string peer in values.GetValueOrDefault("peers", string.Empty).Split(',', StringSplitOptions.RemoveEmptyEntries))
        {
            if (!long.TryParse(peer, NumberStyles.None, CultureInfo.InvariantCulture, out long peerId))
            {
                error = $"--peers must be comma-separated ids (got '{peer}')";
                return false;
            }

            if (peerId != id)
            {
                peers.Add(peerId);
            }
        }

        if (id <= 0 || peers.Count == 0 || intervalMs <= 0 || groupCommitMs <= 0 || exposeMs <= 0)
        {
            error = "--id must be positive, --peers must name another participant, and every period must be positive";
            return false;
        }

        arguments = new ParticipantArguments(id, coordinator, directory, peers, (int)seed,
            TimeSpan.FromMilliseconds(intervalMs), TimeSpan.FromMilliseconds(groupCommitMs), TimeSpan.FromMilliseconds(exposeMs));
        return true;
    }

    private static bool TryGetLong(Dictionary<string, string> values, string name, long? fallback, out long value, out string error)
    {
        error = string.Empty;
        if (!values.TryGetValue(name, out string? text))
        {
            value = fallback.GetValueOrDefault();
            if (fallback is null)
            {
                error = $"--{name} is required";
                return false;
            }

            return true;
        }

        if (!long.TryParse(text, NumberStyles.AllowLeadingSign, CultureInfo.InvariantCulture, out value))
        {
            error = $"--{name} must be an integer (got '{text}')";
            return false;
        }

        return true;
    }
}
