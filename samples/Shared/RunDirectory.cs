namespace Dse.Samples.Shared;

/// <summary>The folder a launcher's run keeps its clusters in: the one asked for, or a temp folder deleted at the end.</summary>
internal static class RunDirectory
{
    /// <summary><paramref name="requested"/>, or a new temp folder named from <paramref name="prefix"/>.</summary>
    public static string Create(string? requested, string prefix) => requested ?? Directory.CreateTempSubdirectory(prefix).FullName;

    /// <summary>Empties (deletes, if present) a mode's subfolder before its cluster starts in it.</summary>
    public static string Fresh(string root, string name)
    {
        string directory = Path.Combine(root, name);
        if (Directory.Exists(directory))
        {
            Directory.Delete(directory, recursive: true);
        }

        return directory;
    }

    /// <summary>Deletes <paramref name="directory"/>, best effort: a file still held open stays behind in the temp folder.</summary>
    public static void TryDelete(string directory)
    {
        try
        {
            Directory.Delete(directory, recursive: true);
        }
        catch (IOException)
        {
            // Best effort.
        }
        catch (UnauthorizedAccessException)
        {
            // Same.
        }
    }
}
