namespace Dse;

/// <summary>
/// Removes the participants a <see cref="ClusterCoordinator"/> has not heard from within
/// <see cref="ClusterCoordinatorOptions.HeartbeatTimeout"/>: a timer sweeps every quarter of the timeout, and each silent
/// participant gets a removal decision.
/// </summary>
/// <remarks>
/// A sweep runs under the coordinator's mutation lock, so it is serialized with every journaled change, and removes
/// nobody while the coordinator recovers, a cold start is open or the coordinator stopped serving. A sweep the timer
/// starts never throws: a failure is logged and the next tick sweeps again.
/// </remarks>
internal sealed class HeartbeatSweep : IAsyncDisposable
{
    private readonly ClusterCoordinator _coordinator;
    private readonly TimeSpan _timeout;
    private readonly ITimer _timer;

    /// <summary>Starts the timer; the coordinator's collaborators must be in place, because the first tick may come at once.</summary>
    public HeartbeatSweep(ClusterCoordinator coordinator, TimeSpan timeout)
    {
        _coordinator = coordinator;
        _timeout = timeout;
        var period = timeout / 4;
        _timer = coordinator.Time.CreateTimer(static s => ((HeartbeatSweep)s!).OnTimer(), this, period, period);
    }

    /// <summary>Removes every participant not heard from within the timeout, in id order, and returns them.</summary>
    public async Task<IReadOnlyList<long>> RemoveSilentAsync(CancellationToken cancellationToken)
    {
        var mutation = _coordinator.Mutation;
        await mutation.WaitAsync(cancellationToken).ConfigureAwait(false);
        try
        {
            List<long> silent;
            lock (_coordinator.Sync)
            {
                if (_coordinator.IsFaulted || _coordinator.IsRecovering || _coordinator.IsColdStarting)
                {
                    return [];
                }

                silent = _coordinator.Members.Silent(_coordinator.Time, _timeout);
            }

            foreach (long id in silent)
            {
                await _coordinator.DecideRemovalAsync(id, $"no heartbeat within {_timeout.TotalSeconds:0.###} s").ConfigureAwait(false);
            }

            return silent;
        }
        finally
        {
            mutation.Release();
        }
    }

    /// <summary>Stops the timer.</summary>
    public ValueTask DisposeAsync() => _timer.DisposeAsync();

    private void OnTimer() => _ = SweepAsync();

    private async Task SweepAsync()
    {
        try
        {
            await RemoveSilentAsync(CancellationToken.None).ConfigureAwait(false);
        }
        catch (Exception ex)
        {
            ClusterCoordinatorLogMessages.SweepFailed(_coordinator.Logger, ex);
        }
    }
}
