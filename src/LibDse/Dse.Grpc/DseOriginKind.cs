namespace Dse.Grpc;

/// <summary>Where the DSE state of an outgoing call comes from.</summary>
internal enum DseOriginKind
{
    /// <summary>No DSE context: the call passes through untouched.</summary>
    None,

    /// <summary>A segment of an intercepted server call: the call carries the running action's vertex.</summary>
    Segment,

    /// <summary>An sthread bound with <see cref="DseCall.Use"/>.</summary>
    Sthread,
}
