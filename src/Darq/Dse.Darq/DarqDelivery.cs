namespace Dse.Darq;

/// <summary>An OUT message on its way from its source DARQ to its destination.</summary>
/// <param name="Source">The source DARQ's name (<see cref="DarqOptions.Name"/>); it must be stable and unique among a destination's sources.</param>
/// <param name="SourceLsn">The OUT entry's LSN in the source's log: the deduplication sequence number at the destination.</param>
/// <param name="Destination">The destination name the OUT message carries.</param>
/// <param name="Payload">The payload bytes.</param>
public readonly record struct DarqDelivery(string Source, long SourceLsn, string Destination, ReadOnlyMemory<byte> Payload)
{
    /// <summary>
    /// General speculation: the encoded DSE header of the source's vertex (<see cref="DseHeader.ToArray"/>); the destination
    /// starts its receive action with it. Empty when the source does not speculate generally.
    /// </summary>
    public ReadOnlyMemory<byte> DseHeader { get; init; }
}
