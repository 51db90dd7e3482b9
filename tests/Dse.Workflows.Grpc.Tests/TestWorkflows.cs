using System.Collections.Concurrent;

namespace Dse.Workflows.Grpc.Tests;

/// <summary>The workflow types the tests run.</summary>
public static class TestWorkflows
{
    /// <summary>Greets its input in a step: "ada" gives "hello ada".</summary>
    public const string Greet = "greet";

    /// <summary>Takes an <see cref="Order"/>, returns twice its quantity.</summary>
    public const string Double = "double";

    /// <summary>Waits for signal "go" (an int) and returns twice its payload; cancellable while it waits.</summary>
    public const string WaitForGo = "wait-for-go";

    /// <summary>Throws <see cref="InvalidOperationException"/> "boom".</summary>
    public const string Fail = "fail";

    /// <summary>Runs a step that announces its input (see <see cref="AnnouncedAsync"/>), then waits for signal "go" and returns its payload.</summary>
    public const string Announce = "announce";

    private static readonly ConcurrentDictionary<string, TaskCompletionSource> s_announced = new();

    /// <summary>Completes once a workflow of type <see cref="Announce"/> ran its step with <paramref name="key"/> as input.</summary>
    public static Task AnnouncedAsync(string key) => Announcement(key).Task;

    public static WorkflowRegistry Register(WorkflowRegistry registry) => registry
        .Register<string, string>(Greet, (context, name) => context.CallAsync("greet", (_, _) => Task.FromResult($"hello {name}")))
        .Register<Order, int>(Double, (_, order) => Task.FromResult(order.Quantity * 2))
        .Register<string, int>(WaitForGo, async (context, _) => 2 * await context.WaitForSignalAsync<int>("go"))
        .Register<string, int>(Announce, async (context, key) =>
        {
            await context.CallAsync("announce", (_, _) =>
            {
                Announcement(key).TrySetResult();
                return Task.FromResult(true);
            });
            return await context.WaitForSignalAsync<int>("go");
        })
        .Register<string, string>(Fail, (_, _) => throw new InvalidOperationException("boom"));

    private static TaskCompletionSource Announcement(string key) =>
        s_announced.GetOrAdd(key, static _ => new TaskCompletionSource(TaskCreationOptions.RunContinuationsAsynchronously));
}

/// <summary>The input of <see cref="TestWorkflows.Double"/>.</summary>
public sealed record Order(string Item, int Quantity);
