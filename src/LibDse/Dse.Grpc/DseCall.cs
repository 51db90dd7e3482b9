using System.Runtime.CompilerServices;

namespace Dse.Grpc;

/// <summary>
/// The speculative context of outgoing calls. Inside a handler run by <see cref="DseServerInterceptor"/> nothing is
/// needed: calls made there carry the handler's state. Elsewhere, <see cref="Use"/> makes the calls of one flow carry
/// an sthread's header and receive their replies' headers into it.
/// </summary>
public static class DseCall
{
    private static readonly AsyncLocal<Sthread?> s_bound = new();

    // An sthread is one logical flow, but calls made under one binding may complete concurrently (Task.WhenAll): every
    // check the interceptor makes of a bound sthread (a send, a receipt, a barrier) takes its gate, so they never
    // interleave; a receipt or barrier that must wait (for a world-line, for a commit) waits outside it.
    private static readonly ConditionalWeakTable<Sthread, SemaphoreSlim> s_gates = [];

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

    /// <summary>The header for a call made under the binding, taken under the sthread's gate.</summary>
    internal static DseHeader Send(Sthread sthread)
    {
        var gate = GateOf(sthread);

        // Held only by synchronous checks (receipts and barriers wait outside it), so this blocks briefly if at all.
        gate.Wait();
        try
        {
            return sthread.Send();
        }
        finally
        {
            gate.Release();
        }
    }

    /// <summary>Receives a reply's header into the bound sthread, one receipt at a time.</summary>
    internal static ValueTask<bool> ReceiveAsync(Sthread sthread, DseHeader header) => sthread.ReceiveAsync(header, GateOf(sthread), CancellationToken.None);

    /// <summary>Waits at the bound sthread's barrier without racing a receipt (a barrier resets the observed set).</summary>
    internal static ValueTask BarrierAsync(Sthread sthread, CancellationToken cancellationToken) => sthread.BarrierAsync(GateOf(sthread), cancellationToken);

    private static SemaphoreSlim GateOf(Sthread sthread) => s_gates.GetValue(sthread, static _ => new SemaphoreSlim(1, 1));

    /// <summary>Restores the flow's previous binding when disposed.</summary>
    public readonly struct Binding : IDisposable
    {
        private readonly Sthread? _previous;

        internal Binding(Sthread? previous) => _previous = previous;

        /// <inheritdoc />
        public void Dispose() => s_bound.Value = _previous;
    }
}
