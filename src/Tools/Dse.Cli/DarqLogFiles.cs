namespace Dse.Cli;

/// <summary>
/// Where a DARQ over local files keeps its state: <c>{name}.log.{n}</c> (the FasterLog's segments) and
/// <c>{name}.commit.0</c> (its commit records) in one directory, and the lock files <c>.{name}.log.lock</c> and
/// <c>.{name}.commit.lock</c> beside them (docs/storage-format.md, "Fencing").
/// </summary>
/// <param name="Directory">The directory.</param>
/// <param name="Name">The file name prefix of the DARQ's devices.</param>
internal sealed record DarqLogFiles(string Directory, string Name)
{
    private const string CommitSuffix = ".commit.0";

    /// <summary>The path the log device was created with (segments are this path plus <c>.{n}</c>).</summary>
    public string LogPath => Path.Combine(Directory, Name + ".log");

    /// <summary>The path the commit device was created with.</summary>
    public string CommitPath => Path.Combine(Directory, Name + ".commit");

    /// <summary>The lock files a running DARQ holds (with <c>DarqOptions.ExclusiveStorage</c>, the default).</summary>
    public IEnumerable<string> LockFiles =>
        [Path.Combine(Directory, $".{Name}.log.lock"), Path.Combine(Directory, $".{Name}.commit.lock")];

    /// <summary>The log's segment files by number.</summary>
    public SortedDictionary<long, FileInfo> Segments()
    {
        var segments = new SortedDictionary<long, FileInfo>();
        foreach (var file in new DirectoryInfo(Directory).EnumerateFiles(Name + ".log.*"))
        {
            if (long.TryParse(file.Name.AsSpan(Name.Length + ".log.".Length), out long number) && number >= 0)
            {
                segments[number] = file;
            }
        }

        return segments;
    }

    /// <summary>The DARQ in <paramref name="directory"/>: the one there, or the one named <paramref name="name"/>.</summary>
    /// <exception cref="CliFailureException">No such directory, no DARQ in it, or no DARQ of that name.</exception>
    /// <exception cref="CliUsageException">Several DARQs and no <c>--name</c> to choose one.</exception>
    public static DarqLogFiles Find(string directory, string? name)
    {
        if (!System.IO.Directory.Exists(directory))
        {
            throw new CliFailureException(File.Exists(directory)
                ? $"darq inspect: {CliArguments.Shown(directory)} is a file; pass the directory that holds the DARQ's NAME.log.N and NAME.commit.0 files."
                : $"darq inspect: no directory {CliArguments.Shown(directory)}.");
        }

        var names = new DirectoryInfo(directory).EnumerateFiles("*" + CommitSuffix)
            .Select(file => file.Name[..^CommitSuffix.Length])
            .Where(found => found.Length > 0)
            .Order(StringComparer.Ordinal)
            .ToList();
        if (name is not null)
        {
            return names.Contains(name)
                ? new DarqLogFiles(directory, name)
                : throw new CliFailureException($"darq inspect: {CliArguments.Shown(directory)} holds no DARQ named {CliArguments.Shown(name)} (no {name}{CommitSuffix}).");
        }

        return names.Count switch
        {
            0 => throw new CliFailureException($"darq inspect: {CliArguments.Shown(directory)} holds no DARQ (no NAME{CommitSuffix} commit file)."),
            1 => new DarqLogFiles(directory, names[0]),
            _ => throw new CliUsageException($"darq inspect: {CliArguments.Shown(directory)} holds several DARQs ({string.Join(", ", names)}); choose one with --name."),
        };
    }
}
