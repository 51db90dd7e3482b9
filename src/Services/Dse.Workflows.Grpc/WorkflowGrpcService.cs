using Dse.Grpc;
using Dse.Workflows.Grpc.V1;
using Grpc.Core;
using Microsoft.Extensions.Hosting;

namespace Dse.Workflows.Grpc;

/// <summary>
/// The workflow engine's gRPC API (<c>dse.workflows.v1.WorkflowService</c>) with DSE written by hand: host it WITHOUT
/// <see cref="DseServerInterceptor"/>. Each call that records or shows something is one action of the engine's log: it
/// starts from the caller's DSE header (<see cref="DseManualCall.StartActionAsync(StateObject, ServerCallContext, DseHeaderAuthentication?)"/>),
/// calls the engine's in-action method, and ends with <see cref="DseManualCall.EndActionAsync(StateObject, ServerCallContext, bool)"/>, which returns the
/// header in the trailers to a speculative caller at once and holds the reply to any other caller until it is
/// recoverable. Execute and GetResult wait for the outcome outside any action, then check in an action that no rollback
/// replaced it, and release it the same way; an outcome rolled back before its release is waited for again.
/// </summary>
/// <remarks>
/// No action spans an await: the engine's in-action methods are synchronous, and the waits for the engine, the outcome
/// and the barrier all happen outside actions, so the log's persistence is never held up by a call.
/// </remarks>
[BindServiceMethod(typeof(WorkflowServiceBinding), nameof(WorkflowServiceBinding.Bind))]
public sealed class WorkflowGrpcService : WorkflowService.WorkflowServiceBase
{
    private readonly WorkflowEngine _engine;
    private readonly DseHeaderAuthentication? _authentication;
    private readonly CancellationToken _hostStopping;

    /// <summary>
    /// Serves <paramref name="engine"/>, accepting DSE headers only from callers <paramref name="authentication"/>
    /// accepts (hosting registers it from <c>Dse:Participants</c>; <c>null</c>: from any caller). Once
    /// <paramref name="lifetime"/> says the host stops, waits for an outcome end with UNAVAILABLE, so that a long wait
    /// does not hold up the host's shutdown.
    /// </summary>
    public WorkflowGrpcService(WorkflowEngine engine, DseHeaderAuthentication? authentication = null, IHostApplicationLifetime? lifetime = null)
    {
        ArgumentNullException.ThrowIfNull(engine);
        _engine = engine;
        _authentication = authentication;
        _hostStopping = lifetime?.ApplicationStopping ?? CancellationToken.None;
    }

    /// <inheritdoc />
    public override async Task<StartReply> Start(StartRequest request, ServerCallContext context)
    {
        RequireId(request.Id, context);
        var started = await InActionAsync(context, request.Id, () => _engine.StartInAction(request.Type, request.Id, request.Input.Memory), release: true);
        return new StartReply { Id = started.Id, Run = started.Run, AlreadyStarted = started.AlreadyStarted };
    }

    /// <inheritdoc />
    public override Task<ResultReply> Execute(StartRequest request, ServerCallContext context)
    {
        RequireId(request.Id, context);
        return ResultAsync(request.Id, request, context);
    }

    /// <inheritdoc />
    public override Task<ResultReply> GetResult(GetResultRequest request, ServerCallContext context)
    {
        RequireId(request.Id, context);
        return ResultAsync(request.Id, start: null, context);
    }

    /// <inheritdoc />
    public override async Task<SignalReply> Signal(SignalRequest request, ServerCallContext context)
    {
        RequireId(request.Id, context);
        if (string.IsNullOrWhiteSpace(request.Name))
        {
            throw WorkflowRpcErrors.BadRequest(context.Method, "SignalRequest.name is empty; name the signal the workflow waits for.");
        }

        await InActionAsync(context, request.Id, () =>
        {
            _engine.SignalInAction(request.Id, request.Name, request.Payload.Memory);
            return true;
        }, release: true);
        return new SignalReply();
    }

    /// <inheritdoc />
    public override async Task<CancelReply> Cancel(CancelRequest request, ServerCallContext context)
    {
        RequireId(request.Id, context);
        await InActionAsync(context, request.Id, () =>
        {
            _engine.CancelInAction(request.Id);
            return true;
        }, release: true);
        return new CancelReply();
    }

    /// <inheritdoc />
    public override async Task<DescribeReply> Describe(DescribeRequest request, ServerCallContext context)
    {
        RequireId(request.Id, context);

        // In an action like the others: what it shows is speculative, so a caller without DSE gets it after a barrier.
        var description = await InActionAsync(context, request.Id, () => _engine.Describe(request.Id), release: true);
        return WorkflowWire.ToReply(description);
    }

    /// <summary>
    /// Execute (<paramref name="start"/> set: start or join first) and GetResult: waits for the outcome, checks in an
    /// action that it is still current, and releases it; an outcome rolled back on the way is waited for again (after
    /// starting again, for Execute: a rollback may have taken the start too).
    /// </summary>
    private async Task<ResultReply> ResultAsync(string id, StartRequest? start, ServerCallContext context)
    {
        while (true)
        {
            if (start is not null)
            {
                await InActionAsync(context, id, () => _engine.StartInAction(start.Type, start.Id, start.Input.Memory), release: false);
            }
            else
            {
                await WaitForReadyAsync(context, id);
            }

            long generations = _engine.Generations;
            var outcome = await WaitAsync(context, id, token => _engine.WaitForOutcomeAsync(id, token));
            bool speculativeCaller = await DseManualCall.StartActionAsync(_engine.Log, context, _authentication);
            if (outcome.Status == WorkflowStatus.Stopped)
            {
                // Answered at once, as the engine's own client does: a stop is not recorded, so no barrier can cover it.
                // A speculative caller of a speculative log still gets the header, for its dependency on the history.
                if (speculativeCaller && _engine.Log.Options.Speculative)
                {
                    await DseManualCall.EndActionAsync(_engine.Log, context, speculativeCaller);
                }
                else
                {
                    _engine.Log.EndAction();
                }

                return WorkflowWire.ToReply(outcome);
            }

            // Inside the action its version is at or after the one that recorded the outcome, if nothing rolled it back.
            if (!_engine.IsOutcomeCurrent(id, outcome))
            {
                _engine.Log.EndAction();

                // A rollback ends the generation, and the engine is not ready until it has reloaded (awaited next round).
                // The same generation, ready, yet the outcome is not current: the engine was disposed meanwhile.
                if (_engine.Generations == generations && _engine.WhenReadyAsync(CancellationToken.None).IsCompletedSuccessfully)
                {
                    throw WorkflowRpcErrors.Map(new WorkflowEngineUnavailableException("The workflow engine stopped serving while the call waited for the outcome; retry."), context.Method)!;
                }

                continue;
            }

            try
            {
                await DseManualCall.EndActionAsync(_engine.Log, context, speculativeCaller);
            }
            catch (RpcException ex) when (IsRolledBack(ex))
            {
                // The barrier failed: the outcome was rolled back. The workflow resumes from what survived and ends again.
                continue;
            }

            return WorkflowWire.ToReply(outcome);
        }
    }

    /// <summary>
    /// Runs <paramref name="call"/> (one of the engine's in-action methods) as one action of the log, once the engine
    /// serves. With <paramref name="release"/>, the action ends with <see cref="DseManualCall.EndActionAsync(StateObject, ServerCallContext, bool)"/>, which
    /// releases the reply; otherwise it just ends (a later action of the same call releases it). An error ends the action
    /// with the release too (it may depend on the history) and becomes a status. A call refused because the engine
    /// began reloading its history runs again once it has reloaded: nothing was recorded.
    /// </summary>
    private async Task<T> InActionAsync<T>(ServerCallContext context, string id, Func<T> call, bool release)
    {
        while (true)
        {
            await WaitForReadyAsync(context, id);
            long generations = _engine.Generations;
            bool speculativeCaller = await DseManualCall.StartActionAsync(_engine.Log, context, _authentication);
            T result;
            try
            {
                result = call();
            }
            catch (WorkflowEngineUnavailableException) when (_engine.Generations != generations || !_engine.WhenReadyAsync(CancellationToken.None).IsCompleted)
            {
                _engine.Log.EndAction();
                continue;
            }
            catch (Exception ex)
            {
                await DseManualCall.EndActionAsync(_engine.Log, context, speculativeCaller);
                if (WorkflowRpcErrors.Map(ex, context.Method) is { } status)
                {
                    throw status;
                }

                throw;
            }

            if (release)
            {
                await DseManualCall.EndActionAsync(_engine.Log, context, speculativeCaller);
            }
            else
            {
                _engine.Log.EndAction();
            }

            return result;
        }
    }

    /// <summary>Waits until the engine serves (started, not reloading), bounded by the call and by the host's stop.</summary>
    private Task WaitForReadyAsync(ServerCallContext context, string id) =>
        WaitAsync(context, id, async token =>
        {
            await _engine.WhenReadyAsync(token);
            return true;
        });

    /// <summary>Awaits one of the engine's waits, bounded by the call and by the host's stop; the engine's refusals become statuses.</summary>
    private async Task<T> WaitAsync<T>(ServerCallContext context, string id, Func<CancellationToken, Task<T>> wait)
    {
        using var bound = _hostStopping.CanBeCanceled
            ? CancellationTokenSource.CreateLinkedTokenSource(context.CancellationToken, _hostStopping)
            : null;
        try
        {
            return await wait(bound?.Token ?? context.CancellationToken);
        }
        catch (OperationCanceledException) when (_hostStopping.IsCancellationRequested && !context.CancellationToken.IsCancellationRequested)
        {
            throw WorkflowRpcErrors.HostStopping(context.Method, id);
        }
        catch (Exception ex) when (WorkflowRpcErrors.Map(ex, context.Method) is { } status)
        {
            throw status;
        }
    }

    /// <summary>ABORTED from <see cref="DseManualCall.EndActionAsync(StateObject, ServerCallContext, bool)"/>: the state the reply waited for at its barrier was rolled back.</summary>
    private static bool IsRolledBack(RpcException error) =>
        error.StatusCode == StatusCode.Aborted && error.Trailers.Get(DseMetadata.RolledBackKey) is not null;

    private static void RequireId(string id, ServerCallContext context)
    {
        if (string.IsNullOrWhiteSpace(id))
        {
            throw WorkflowRpcErrors.BadRequest(context.Method, "the request's id is empty; name the workflow.");
        }
    }
}
