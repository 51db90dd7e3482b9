using Grpc.Core;

namespace Dse.Grpc;

/// <summary>
/// Where DSE headers travel in a gRPC call: one binary metadata entry, in the request headers on the way in and in the
/// response trailers on the way back. A call without the entry comes from a non-speculative caller.
/// </summary>
public static class DseMetadata
{
    /// <summary>The metadata key of the DSE header (binary: the <c>-bin</c> suffix makes gRPC carry raw bytes).</summary>
    public const string HeaderKey = "dse-header-bin";

    /// <summary>
    /// The trailer a DSE server adds when it refuses or abandons a call because of a rollback: the world-line of the
    /// decision, as decimal text.
    /// </summary>
    public const string RolledBackKey = "dse-rolled-back";

    /// <summary>
    /// The trailer a DSE server adds to a reply to a speculative caller that it released after a barrier (it runs
    /// non-speculatively): the reply carries no header because everything it depends on is recoverable. Its value is
    /// <c>1</c>. A reply to a call that sent a header, with neither this trailer nor a header, comes from a server without
    /// DSE.
    /// </summary>
    public const string BarrierKey = "dse-barrier";

    /// <summary>
    /// Reads the DSE header of <paramref name="metadata"/>. Returns <c>false</c> (and <see cref="DseHeaderKind.None"/>)
    /// when the entry is absent: the caller is not speculative.
    /// </summary>
    /// <exception cref="DseHeaderFormatException">The entry is present but malformed, truncated, or not binary.</exception>
    public static bool TryGetHeader(Metadata? metadata, out DseHeader header)
    {
        header = default;
        if (metadata is null)
        {
            return false;
        }

        Metadata.Entry? entry = null;
        foreach (var candidate in metadata)
        {
            if (string.Equals(candidate.Key, HeaderKey, StringComparison.Ordinal))
            {
                entry = entry is null ? candidate : throw new DseHeaderFormatException($"More than one '{HeaderKey}' metadata entry; a call carries one DSE header.");
            }
        }

        if (entry is null)
        {
            return false;
        }

        if (!entry.IsBinary)
        {
            throw new DseHeaderFormatException($"The '{HeaderKey}' metadata entry must be binary.");
        }

        header = DseHeader.Parse(entry.ValueBytes);
        return true;
    }

    /// <summary>Reads the DSE header like <see cref="TryGetHeader"/>, turning a malformed one into an INVALID_ARGUMENT status.</summary>
    /// <exception cref="RpcException">INVALID_ARGUMENT: the header is malformed; the message says how.</exception>
    public static bool TryGetRequestHeader(Metadata? metadata, out DseHeader header)
    {
        try
        {
            return TryGetHeader(metadata, out header);
        }
        catch (DseHeaderFormatException ex)
        {
            throw DseRpcErrors.MalformedHeader(ex);
        }
    }

    /// <summary>
    /// Reads the DSE header of a call's request like <see cref="TryGetRequestHeader(Metadata?, out DseHeader)"/>; request
    /// metadata the server cannot decode is INVALID_ARGUMENT too.
    /// </summary>
    /// <exception cref="RpcException">INVALID_ARGUMENT: the header, or a binary entry of the metadata, is malformed.</exception>
    public static bool TryGetRequestHeader(ServerCallContext context, out DseHeader header)
    {
        ArgumentNullException.ThrowIfNull(context);
        Metadata metadata;
        try
        {
            metadata = context.RequestHeaders;
        }
        catch (FormatException ex)
        {
            // grpc-dotnet decodes binary entries when the metadata is first read. HTTP/2 joins repeated header fields with
            // a comma, so two DSE headers arrive as one value that is not base64.
            throw new RpcException(new Status(StatusCode.InvalidArgument,
                $"Malformed request metadata: a binary ('-bin') entry is not valid base64 ({ex.Message}); a call carries one '{HeaderKey}' entry, and two arrive joined by a comma."));
        }

        return TryGetRequestHeader(metadata, out header);
    }

    /// <summary>A copy of <paramref name="metadata"/> without its DSE header.</summary>
    public static Metadata WithoutHeader(Metadata? metadata)
    {
        var copy = new Metadata();
        if (metadata is not null)
        {
            foreach (var entry in metadata)
            {
                if (!string.Equals(entry.Key, HeaderKey, StringComparison.Ordinal))
                {
                    copy.Add(entry);
                }
            }
        }

        return copy;
    }

    /// <summary>Sets the DSE header of <paramref name="metadata"/>, replacing any earlier one. A None header removes it.</summary>
    public static void SetHeader(Metadata metadata, in DseHeader header)
    {
        ArgumentNullException.ThrowIfNull(metadata);
        for (int i = metadata.Count - 1; i >= 0; i--)
        {
            if (string.Equals(metadata[i].Key, HeaderKey, StringComparison.Ordinal))
            {
                metadata.RemoveAt(i);
            }
        }

        if (header.Kind != DseHeaderKind.None)
        {
            metadata.Add(HeaderKey, header.ToArray());
        }
    }
}
