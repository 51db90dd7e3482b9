namespace Dse.Cli;

/// <summary>
/// Holds a DARQ's lock files while it is inspected, so that a DARQ starting meanwhile is refused rather than writing
/// under the reader; refuses at once when a running DARQ holds them. A lock file that does not exist is not created:
/// nothing in the directory changes.
/// </summary>
internal sealed class DarqStorageLock : IDisposable
{
    private readonly List<FileStream> _held = [];

    private DarqStorageLock()
    {
    }

    /// <summary>Takes every existing lock file of <paramref name="files"/>.</summary>
    /// <exception cref="CliFailureException">A running DARQ holds one.</exception>
    public static DarqStorageLock Acquire(DarqLogFiles files)
    {
        var taken = new DarqStorageLock();
        try
        {
            foreach (string path in files.LockFiles)
            {
                if (!File.Exists(path))
                {
                    continue;
                }

                try
                {
                    // FileShare.None is flock(LOCK_EX | LOCK_NB) on Unix, a share mode on Windows: what StorageFence takes.
                    taken._held.Add(new FileStream(path, FileMode.Open, FileAccess.Read, FileShare.None));
                }
                catch (IOException)
                {
                    throw new CliFailureException(
                        $"darq inspect: DARQ '{files.Name}' in {CliArguments.Shown(files.Directory)} is open in a running process (it holds {Path.GetFileName(path)}); " +
                        "stop it, or inspect a copy of the directory.");
                }
            }

            return taken;
        }
        catch
        {
            taken.Dispose();
            throw;
        }
    }

    /// <summary>Releases the lock files.</summary>
    public void Dispose()
    {
        foreach (var stream in _held)
        {
            stream.Dispose();
        }

        _held.Clear();
    }
}
