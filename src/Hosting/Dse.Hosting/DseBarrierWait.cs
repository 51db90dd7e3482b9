using System.Globalization;
using Grpc.Core;

namespace Dse.Hosting;

/// <summary>
/// Bounds the wait of one intercepted call's reply at its barrier: <see cref="DseHostingOptions.BarrierTimeout"/>,
/// counted from the moment the handler returned (or threw), after which the call fails with DEADLINE_EXCEEDED and a
/// message naming what the reply waited for. The interceptor's own wait is left to finish in the background (the
/// barrier passes, is rolled back, or the StateObject faults or is disposed); its outcome no longer reaches the caller.
/// </summary>
/// <remarks>
/// The call's <see cref="ServerCallContext"/> cannot be replaced by one whose token fires at the bound: ASP.NET's gRPC
/// pipeline resolves the service through the context it created. Hence a race rather than a cancellation.
/// </remarks>
internal sealed class DseBarrierWait(StateObject owner, string method, TimeSpan timeout, TimeProvider time)
{
    private readonly TaskCompletionSource _returned = new(TaskCreationOptions.RunContinuationsAsynchronously);

    // The owner's version and world-line when the handler returned: the newest own state the reply can depend on.
    // Written once, before _returned completes; read after it did.
    private long _version = -1;
    private long _worldLine;

    /// <summary>Runs the handler; the bound starts once it completes (or throws). Returns its task unchanged.</summary>
    public Task<T> RunHandler<T>(Func<Task<T>> handler)
    {
        Task<T> task;
        try
        {
            task = handler();
        }
        catch
        {
            Returned();
            throw;
        }

        WhenDone(task);
        return task;
    }

    /// <summary>Runs the handler; the bound starts once it completes (or throws). Returns its task unchanged.</summary>
    public Task RunHandler(Func<Task> handler)
    {
        Task task;
        try
        {
            task = handler();
        }
        catch
        {
            Returned();
            throw;
        }

        WhenDone(task);
        return task;
    }

    /// <summary>The intercepted call's outcome, unless its reply still waits <c>timeout</c> after the handler returned.</summary>
    /// <exception cref="RpcException">DEADLINE_EXCEEDED: the reply waited longer.</exception>
    public async Task<T> BoundAsync<T>(Task<T> call)
    {
        if (await Task.WhenAny(call, _returned.Task).ConfigureAwait(false) == call)
        {
            return await call.ConfigureAwait(false);
        }

        try
        {
            return await call.WaitAsync(timeout, time).ConfigureAwait(false);
        }
        catch (TimeoutException)
        {
            Abandon(call);
            throw TimeoutError();
        }
    }

    /// <inheritdoc cref="BoundAsync{T}(Task{T})"/>
    public async Task BoundAsync(Task call)
    {
        if (await Task.WhenAny(call, _returned.Task).ConfigureAwait(false) == call)
        {
            await call.ConfigureAwait(false);
            return;
        }

        try
        {
            await call.WaitAsync(timeout, time).ConfigureAwait(false);
        }
        catch (TimeoutException)
        {
            Abandon(call);
            throw TimeoutError();
        }
    }

    /// <summary>DEADLINE_EXCEEDED naming what the reply waited for and, as far as this StateObject can tell, why.</summary>
    private RpcException TimeoutError()
    {
        var view = owner.ClusterView;
        long committed = owner.CommittedVersion;
        string why = owner.Fault is { } fault
            ? $"StateObject {owner.Id} faulted: {fault.Message}"
            : view.IsRecovering
                ? "The coordinator is recovering from its own restart: nothing commits until every registered participant has answered it."
                : owner.WorldLine != view.WorldLine
                    ? $"StateObject {owner.Id} is still applying the rollback to world-line {view.WorldLine}."
                    : committed < _version
                        ? $"StateObject {owner.Id}'s own version {_version} has not committed (committed through {committed}): its persist has not completed and been reported, or it depends on versions of other participants that do not commit (state another participant lost, or a participant that does not persist or report)."
                        : $"StateObject {owner.Id}'s own versions have committed: the reply waits for versions of other participants that the call observed.";
        string boundary = string.Join(", ", view.Committed.OrderBy(static e => e.Key).Select(static e => $"{e.Key}: {e.Value}"));
        string seconds = timeout.TotalSeconds.ToString("0.###", CultureInfo.InvariantCulture);
        string message = $"{method}: the reply waited {seconds} s ({DseHostingOptions.Key(nameof(DseHostingOptions.BarrierTimeout))}) at its barrier for the state the call observed to commit, "
            + $"and it did not. It waits for StateObject {owner.Id}'s versions up to {_version} (world-line {_worldLine}) and for the versions of other participants that the replies of its own calls carried. "
            + $"{why} The boundary (StateObject: committed version) is {{{boundary}}} in world-line {view.WorldLine}. "
            + "The call's effects were not rolled back and may still commit: retry only what is safe to repeat.";
        return new RpcException(new Status(StatusCode.DeadlineExceeded, message));
    }

    /// <summary>The abandoned wait ends on its own later; its outcome is observed so that it is never reported as lost.</summary>
    private static void Abandon(Task call) =>
        _ = call.ContinueWith(static t => _ = t.Exception, CancellationToken.None, TaskContinuationOptions.ExecuteSynchronously, TaskScheduler.Default);

    private void WhenDone(Task handler)
    {
        if (handler.IsCompleted)
        {
            Returned();
        }
        else
        {
            _ = handler.ContinueWith(static (_, state) => ((DseBarrierWait)state!).Returned(), this, CancellationToken.None, TaskContinuationOptions.ExecuteSynchronously, TaskScheduler.Default);
        }
    }

    private void Returned()
    {
        _worldLine = owner.WorldLine;
        _version = owner.CurrentVersion;
        _returned.TrySetResult();
    }
}
