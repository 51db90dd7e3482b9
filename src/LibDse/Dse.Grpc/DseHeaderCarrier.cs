namespace Dse.Grpc;

/// <summary>Where a call's caller put its DSE header, and so where the reply carries the server's.</summary>
public enum DseHeaderCarrier
{
    /// <summary>Nowhere: the caller is not speculative, and the reply is released after a barrier.</summary>
    None = 0,

    /// <summary>In the call's metadata (<see cref="DseMetadata.HeaderKey"/>), as <see cref="DseClientInterceptor"/> sends it; the reply's header goes in the trailers.</summary>
    Metadata = 1,

    /// <summary>In a field of the request message, as a hand-written DSE API defines it; the reply's header goes in the reply message.</summary>
    Message = 2,
}
