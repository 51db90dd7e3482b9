using MemoryPack;

namespace Dse.Functions.Tests;

/// <summary>How a graph node issues one of its calls.</summary>
public enum GraphStepKind
{
    /// <summary>An awaited call, awaited at once.</summary>
    Await,

    /// <summary>An awaited call, started now and awaited at the next <see cref="Join"/> (or the body's end) through <c>Task.WhenAll</c>.</summary>
    Start,

    /// <summary>An awaited call that the body never awaits (the invocation's implicit join waits for it).</summary>
    Forget,

    /// <summary>A one-way call.</summary>
    OneWay,

    /// <summary>Not a call: awaits every call started since the last join.</summary>
    Join,
}

/// <summary>One step of a graph node's body: a call of node <see cref="Child"/>, or a join.</summary>
/// <param name="Kind">What the step does.</param>
/// <param name="Child">The node called (ignored for <see cref="GraphStepKind.Join"/>).</param>
[MemoryPackable]
public readonly partial record struct GraphStep(GraphStepKind Kind, int Child);

/// <summary>One node of a random call graph: what its invocation does, in program order.</summary>
/// <param name="Node">The node's id, also the key of the entity it runs on (one entity per node, so no two calls touch one state).</param>
/// <param name="Throws">Whether the body throws <see cref="GraphNodeFailedException"/> after its last step.</param>
/// <param name="Rethrow">Whether a failed call seen at an await fails this body too (else the body catches it and goes on).</param>
/// <param name="Steps">The calls and joins, in program order.</param>
[MemoryPackable]
public sealed partial record GraphSpec(int Node, bool Throws, bool Rethrow, GraphStep[] Steps);

/// <summary>The failure a <see cref="GraphSpec.Throws"/> node raises.</summary>
/// <param name="node">The node.</param>
public sealed class GraphNodeFailedException(int node) : Exception($"node {node} failed");

/// <summary>A node of a test call graph: runs the steps of the <see cref="GraphSpec"/> it is given.</summary>
public interface IGraphNode : IEntity<int>
{
    Task<int> Run(GraphSpec spec);

    [OneWay]
    Task RunOneWay(GraphSpec spec);
}

/// <summary>
/// Runs one node of a call graph: counts one write on its own state, makes its calls as the spec says (the specs of
/// the nodes it calls come from <see cref="GraphProbe.Current"/>), and reports its start and end to the probe.
/// </summary>
public sealed class GraphNodeEntity : Entity<int, int>, IGraphNode
{
    public async Task<int> Run(GraphSpec spec)
    {
        GraphProbe probe = GraphProbe.Current;
        probe.Enter(spec.Node);
        try
        {
            State += 1;
            var started = new List<Task<int>>();
            foreach (GraphStep step in spec.Steps)
            {
                switch (step.Kind)
                {
                    case GraphStepKind.Await:
                        await ObserveAsync(Node(step.Child).Run(probe.Spec(step.Child)), spec.Rethrow);
                        break;
                    case GraphStepKind.Start:
                        started.Add(Node(step.Child).Run(probe.Spec(step.Child)));
                        break;
                    case GraphStepKind.Forget:
                        _ = Node(step.Child).Run(probe.Spec(step.Child));
                        break;
                    case GraphStepKind.OneWay:
                        await Node(step.Child).RunOneWay(probe.Spec(step.Child));
                        break;
                    case GraphStepKind.Join:
                        await ObserveAsync(Task.WhenAll(started), spec.Rethrow);
                        started.Clear();
                        break;
                }
            }

            if (started.Count > 0)
            {
                await ObserveAsync(Task.WhenAll(started), spec.Rethrow);
            }

            if (spec.Throws)
            {
                throw new GraphNodeFailedException(spec.Node);
            }

            return spec.Node;
        }
        finally
        {
            probe.Exit(spec.Node);
        }
    }

    public Task RunOneWay(GraphSpec spec) => Run(spec);

    private IGraphNode Node(int node) => Entities.Get<IGraphNode>(node);

    private static async Task ObserveAsync(Task call, bool rethrow)
    {
        try
        {
            await call;
        }
        catch (EntityTransactionAbortedException) when (!rethrow)
        {
            // Caught: the body goes on (the transaction still aborts).
        }
    }
}
