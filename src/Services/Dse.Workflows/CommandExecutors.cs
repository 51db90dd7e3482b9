using Dse.Grpc;
using Dse.Services;
using Microsoft.Extensions.Logging;

namespace Dse.Workflows;

/// <summary>
/// Runs the commands workflow code waits on, and records their outcomes in the run's history. A step records its intent,
/// runs on an sthread of the log (so the log can persist while the step is in flight, and the step's calls carry the
/// workflow's dependencies), merges the sthread back (taking in what the step's replies depended on) and records its
/// result in the same action. A timer records its deadline, waits, and records that it fired. A child workflow is started
/// in the same log and its outcome recorded in the parent.
/// </summary>
/// <remarks>
/// Executors belong to a generation: when it ends (a rollback of the log), they stop appending, and the next generation's
/// replay starts new ones for whatever is still pending, with the same idempotency keys.
/// </remarks>
internal sealed class CommandExecutors(WorkflowEngine engine, ILogger logger)
{
    private readonly SpeculativeLog _log = engine.Log;

    /// <summary>Starts the executor of <paramref name="command"/>; <paramref name="scheduled"/>: its intent is in the history already.</summary>
    public void Start(WorkflowRun run, WorkflowCommand command, bool scheduled)
    {
        var task = command.Kind switch
        {
            CommandKind.Step => RunStepAsync(run, command, scheduled),
            CommandKind.Timer => RunTimerAsync(run, command, scheduled),
            _ => RunChildAsync(run, command, scheduled),
        };
        run.Generation.Track(task);
    }

    private async Task RunStepAsync(WorkflowRun run, WorkflowCommand command, bool scheduled)
    {
        var token = run.Generation.Token;
        try
        {
            await _log.StartLocalActionAsync(token).ConfigureAwait(false);
            bool recorded;
            try
            {
                recorded = scheduled ? !run.IsClosed : run.TryAppend(HistoryEventKind.StepScheduled, command.Seq, command.Name);
            }
            catch
            {
                _log.EndAction();
                throw;
            }

            // Not speculative: the intent is durable before the step runs (DetachAsync persists and waits).
            var sthread = await _log.DetachAsync(token).ConfigureAwait(false);
            if (!recorded)
            {
                return;
            }

            var outcome = await AttemptAsync(run, command, sthread, token).ConfigureAwait(false);
            if (!await _log.MergeAsync(sthread, token).ConfigureAwait(false))
            {
                engine.RequestReload($"step {command.Seq} '{command.Name}' of workflow '{run.Id}' saw state that was rolled back");
                return;
            }

            try
            {
                if (outcome.Error is null)
                {
                    run.TryAppend(HistoryEventKind.StepCompleted, command.Seq, data: outcome.Result);
                }
                else
                {
                    run.TryAppend(HistoryEventKind.StepFailed, command.Seq, outcome.Error.GetType().FullName, outcome.Error.Message);
                }
            }
            finally
            {
                await _log.EndActionAsync(token).ConfigureAwait(false);
            }
        }
        catch (OperationCanceledException) when (token.IsCancellationRequested)
        {
            // The generation is over.
        }
        catch (DseRolledBackException)
        {
            engine.RequestReload($"step {command.Seq} '{command.Name}' of workflow '{run.Id}' was rolled back");
        }
    }

    private async Task<(byte[]? Result, Exception? Error)> AttemptAsync(WorkflowRun run, WorkflowCommand command, Sthread sthread, CancellationToken token)
    {
        var options = command.StepOptions ?? engine.Options.DefaultStepOptions;
        var time = engine.Options.TimeProvider;
        for (int attempt = 1; ; attempt++)
        {
            using var timeout = options.AttemptTimeout == Timeout.InfiniteTimeSpan ? new CancellationTokenSource() : new CancellationTokenSource(options.AttemptTimeout, time);
            using var linked = CancellationTokenSource.CreateLinkedTokenSource(token, timeout.Token);
            Exception error;
            try
            {
                using (DseCall.Use(sthread))
                {
                    byte[] result = await command.Step!(new StepContext(run.Id, run.RunNumber, command.Seq, attempt), linked.Token).ConfigureAwait(false);
                    if (result.Length > MaxResultBytes)
                    {
                        return (null, new InvalidOperationException($"The step's result is {result.Length} bytes; a history event holds at most {MaxResultBytes}."));
                    }

                    return (result, null);
                }
            }
            catch (Exception ex) when (!token.IsCancellationRequested)
            {
                error = timeout.IsCancellationRequested && ex is OperationCanceledException
                    ? new TimeoutException($"The attempt took longer than {options.AttemptTimeout}.", ex)
                    : ex;
            }

            bool retryable = (options.IsRetryable ?? StepOptions.IsRetryableByDefault)(error) || error is TimeoutException;
            WorkflowLogMessages.LogStepAttemptFailed(logger, run.Id, command.Seq, command.Name, attempt, retryable && attempt < options.MaxAttempts, error);
            if (!retryable || attempt >= options.MaxAttempts)
            {
                return (null, error);
            }

            await Task.Delay(options.BackoffBefore(attempt + 1), time, token).ConfigureAwait(false);
        }
    }

    private int MaxResultBytes => _log.MaxEntryBytes - 4096;

    private async Task RunTimerAsync(WorkflowRun run, WorkflowCommand command, bool scheduled)
    {
        var token = run.Generation.Token;
        try
        {
            if (!scheduled)
            {
                bool recorded = false;
                await engine.AppendInLocalActionAsync(run, r => recorded = r.TryAppend(HistoryEventKind.TimerScheduled, command.Seq, command.Name, data: BitConverter.GetBytes(command.FireAt.UtcTicks)), token).ConfigureAwait(false);
                if (!recorded)
                {
                    return;
                }
            }

            var wait = command.FireAt - engine.Options.TimeProvider.GetUtcNow();
            if (wait > TimeSpan.Zero)
            {
                await Task.Delay(wait, engine.Options.TimeProvider, token).ConfigureAwait(false);
            }

            await engine.AppendInLocalActionAsync(run, r => r.TryAppend(HistoryEventKind.TimerFired, command.Seq), token).ConfigureAwait(false);
        }
        catch (OperationCanceledException) when (token.IsCancellationRequested)
        {
            // The generation is over.
        }
    }

    private async Task RunChildAsync(WorkflowRun run, WorkflowCommand command, bool scheduled)
    {
        var token = run.Generation.Token;
        try
        {
            if (!scheduled)
            {
                Exception? refused = null;
                bool recorded = false;
                await engine.AppendInLocalActionAsync(run, r =>
                {
                    try
                    {
                        engine.StartInAction(command.Name, command.ChildId!, command.ChildInput);
                    }
                    catch (Exception ex) when (ex is ArgumentException or WorkflowNotRunningException)
                    {
                        refused = ex;
                    }

                    recorded = r.TryAppend(HistoryEventKind.ChildScheduled, command.Seq, command.Name, command.ChildId);
                    if (recorded && refused is not null)
                    {
                        r.TryAppend(HistoryEventKind.ChildFailed, command.Seq, refused.GetType().FullName, refused.Message);
                    }
                }, token).ConfigureAwait(false);
                if (!recorded || refused is not null)
                {
                    return;
                }
            }

            // A stopped child may resume after a restart with fixed code: the parent waits for a real outcome.
            var outcome = await engine.WaitForOutcomeAsync(command.ChildId!, includeStopped: false, token).ConfigureAwait(false);
            await engine.AppendInLocalActionAsync(run, r =>
            {
                if (outcome.Status == WorkflowStatus.Completed)
                {
                    r.TryAppend(HistoryEventKind.ChildCompleted, command.Seq, data: outcome.Result);
                }
                else
                {
                    r.TryAppend(HistoryEventKind.ChildFailed, command.Seq, outcome.ErrorType ?? outcome.Status.ToString(), outcome.ErrorMessage ?? $"The child workflow ended {outcome.Status}.");
                }
            }, token).ConfigureAwait(false);
        }
        catch (OperationCanceledException) when (token.IsCancellationRequested)
        {
            // The generation is over.
        }
    }
}
