namespace Dse.Grpc;

/// <summary>
/// The speculative context of outgoing calls. Inside a handler run by <see cref="DseServerInterceptor"/> nothing is
/// needed: calls made there carry the handler's state. Elsewhere, <see cref="Use"/> makes the calls of one flow carry
/// an sthread's header and receive their replies' headers into it.
/// </summary>
public static class DseCall
{
    private static readonly AsyncLocal<Sthread?> s_bound = new();

    /// <summary>Whether the code runs inside an action of an intercepted server call (a handler segment).</summary>
    public static bool IsInAction => DseCallScope.CurrentSegment is not null;

    /// <summary>The sthread bound to this flow by <see cref="Use"/>, if any.</summary>
    public static Sthread? Current => s_bound.Value;

    /// <summary>
    /// Binds <paramref name="sthread"/> to this flow until the returned scope is disposed: calls through
    /// <see cref="DseClientInterceptor"/> then send its header, and receive the replies' headers into it (a reply from
    /// rolled-back state fails the call with ABORTED). Barrier the sthread before showing anything to the outside.
    /// </summary>
    public static Binding Use(Sthread sthread)
    {
        ArgumentNullException.ThrowIfNull(sthread);
        var previous = s_bound.Value;
        s_bound.Value = sthread;
        return new Binding(previous);
    }

    /// <summary>Restores the flow's previous binding when disposed.</summary>
    public readonly struct Binding : IDisposable
    {
        private readonly Sthread? _previous;

        internal Binding(Sthread? previous) => _previous = previous;

        /// <inheritdoc />
        public void Dispose() => s_bound.Value = _previous;
    }
}
