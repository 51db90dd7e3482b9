namespace Dse.Functions.Tests;

/// <summary>
/// What the bodies of one call graph's <see cref="GraphNodeEntity"/> invocations see and report: the graph's node specs,
/// and which bodies have started and ended. Held per thread, since a <see cref="RandomOrderSite"/> runs a whole
/// transaction on the test's thread.
/// </summary>
internal sealed class GraphProbe
{
    [ThreadStatic]
    private static GraphProbe? _current;

    private readonly GraphSpec[] _nodes;
    private readonly List<int> _started = [];
    private readonly List<int> _ended = [];
    private readonly HashSet<int> _running = [];

    public GraphProbe(GraphSpec[] nodes) => _nodes = nodes;

    /// <summary>The probe of the graph the current thread runs.</summary>
    public static GraphProbe Current => _current ?? throw new InvalidOperationException("No graph probe is installed on this thread.");

    /// <summary>The nodes whose bodies started, in start order.</summary>
    public IReadOnlyList<int> Started => _started;

    /// <summary>The nodes whose bodies ended (returned or threw), in end order.</summary>
    public IReadOnlyList<int> Ended => _ended;

    /// <summary>The nodes whose bodies started and have not ended.</summary>
    public IReadOnlyCollection<int> Running => _running;

    /// <summary>Installs <paramref name="probe"/> on this thread until the returned scope is disposed.</summary>
    public static IDisposable Install(GraphProbe probe)
    {
        GraphProbe? previous = _current;
        _current = probe;
        return new Scope(previous);
    }

    /// <summary>The position of <paramref name="node"/>'s end in <see cref="Ended"/>, or -1.</summary>
    public int EndOrder(int node) => _ended.IndexOf(node);

    public GraphSpec Spec(int node) => _nodes[node];

    /// <summary>A body started (a node started twice shows twice in <see cref="Started"/>).</summary>
    public void Enter(int node)
    {
        _started.Add(node);
        _running.Add(node);
    }

    public void Exit(int node)
    {
        _ended.Add(node);
        _running.Remove(node);
    }

    private sealed class Scope(GraphProbe? previous) : IDisposable
    {
        public void Dispose() => _current = previous;
    }
}
