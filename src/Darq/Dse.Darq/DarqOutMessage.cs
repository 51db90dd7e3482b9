namespace Dse.Darq;

/// <summary>A message a step sends to another DARQ.</summary>
/// <param name="Destination">The destination DARQ's name (1 to 256 UTF-8 bytes).</param>
/// <param name="Payload">The payload bytes.</param>
public readonly record struct DarqOutMessage(string Destination, ReadOnlyMemory<byte> Payload);
