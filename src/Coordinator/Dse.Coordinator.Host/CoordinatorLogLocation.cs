namespace Dse.Coordinator.Host;

/// <summary>Where the coordinator log lives: <c>file:PATH</c> or <c>blob:CONTAINER/BLOBNAME</c>.</summary>
/// <param name="Path">The log file, for a file log.</param>
/// <param name="Container">The blob container, for a blob log.</param>
/// <param name="BlobName">The append blob's name, for a blob log.</param>
internal sealed record CoordinatorLogLocation(string? Path, string? Container, string? BlobName)
{
    public bool IsBlob => Container is not null;

    /// <exception cref="HostArgumentException">The value is neither form.</exception>
    public static CoordinatorLogLocation Parse(string value)
    {
        if (value.StartsWith("file:", StringComparison.Ordinal))
        {
            string path = value["file:".Length..];
            return string.IsNullOrWhiteSpace(path)
                ? throw new HostArgumentException("--log file:PATH needs a path.")
                : new CoordinatorLogLocation(path, null, null);
        }

        if (value.StartsWith("blob:", StringComparison.Ordinal))
        {
            string rest = value["blob:".Length..];
            int slash = rest.IndexOf('/', StringComparison.Ordinal);
            if (slash <= 0 || slash == rest.Length - 1)
            {
                throw new HostArgumentException($"--log blob:CONTAINER/BLOBNAME needs a container and a blob name (got {HostArguments.Shown(value)}).");
            }

            return new CoordinatorLogLocation(null, rest[..slash], rest[(slash + 1)..]);
        }

        throw new HostArgumentException($"--log must be file:PATH or blob:CONTAINER/BLOBNAME (got {HostArguments.Shown(value)}).");
    }

    public override string ToString() => IsBlob ? $"blob:{Container}/{BlobName}" : $"file:{Path}";
}
