namespace Dse.Darq.Grpc;

/// <summary>Finds the DARQs a server hosts by name (the <c>darq</c> field of every request).</summary>
public interface IDarqResolver
{
    /// <summary>Finds a hosted DARQ.</summary>
    /// <param name="name">The DARQ's name.</param>
    /// <returns>The DARQ, or <see langword="null"/> when the server hosts none of that name (the call fails with NOT_FOUND).</returns>
    Darq? Resolve(string name);
}
