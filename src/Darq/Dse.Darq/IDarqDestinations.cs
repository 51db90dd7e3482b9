namespace Dse.Darq;

/// <summary>
/// Resolves the destination names of OUT messages to the DARQs that receive them: in process
/// (<see cref="DarqDestinationRegistry"/>) or, later, over a transport such as gRPC.
/// </summary>
/// <remarks>
/// A DARQ delivers to several destinations at once (<see cref="DarqOptions.MaxConcurrentDeliveries"/>): <see cref="Resolve"/>
/// and the destinations it returns are called concurrently for different names, and for one name only one delivery at
/// a time. Implementations must be thread-safe accordingly (the registries here are).
/// </remarks>
public interface IDarqDestinations
{
    /// <summary>Finds a destination by name.</summary>
    /// <param name="name">The destination name an OUT message carries.</param>
    /// <returns>The destination, or <see langword="null"/> when the name is unknown (the message stays pending and is retried).</returns>
    IDarqDestination? Resolve(string name);
}
