using System.Security.Cryptography;

namespace Dse.Testing;

/// <summary>Every file under a directory with its length and a hash of its bytes: equal snapshots mean nothing was created, removed or written.</summary>
public static class DirectoryContents
{
    /// <summary>
    /// Relative path (with '/') to "length:SHA-256", in ordinal order. A file locked by a storage fence (which .NET on Unix
    /// also applies to readers) is recorded by its length alone: lock files stay empty.
    /// </summary>
    public static SortedDictionary<string, string> Snapshot(string directory)
    {
        var files = new SortedDictionary<string, string>(StringComparer.Ordinal);
        foreach (string file in Directory.EnumerateFiles(directory, "*", SearchOption.AllDirectories))
        {
            string name = Path.GetRelativePath(directory, file).Replace('\\', '/');
            long length = new FileInfo(file).Length;
            string hash;
            try
            {
                using var stream = new FileStream(file, FileMode.Open, FileAccess.Read, FileShare.ReadWrite | FileShare.Delete);
                hash = Convert.ToHexString(SHA256.HashData(stream));
            }
            catch (IOException)
            {
                hash = "locked";
            }

            files[name] = $"{length}:{hash}";
        }

        return files;
    }
}
