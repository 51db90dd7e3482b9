using Dse.Coordinator.Tests.Infrastructure;
using Dse.Testing;
using Microsoft.Extensions.Logging;

namespace Dse.Coordinator.Tests;

/// <summary>
/// The service around a coordinator that stopped serving (its journal failed): the host stops when asked to
/// (<see cref="CoordinatorServerOptions.StopHostOnFault"/>), and the refusals participants retry do not flood the log.
/// </summary>
public sealed class CoordinatorServiceFaultTests
{
    [Fact]
    public async Task StopHostOnFault_JournalFails_HostIsAskedToStop()
    {
        var store = new InMemoryCoordinatorLogStore();
        var log = new FaultyCoordinatorLog(store);
        await using var server = await CoordinatorTestServer.StartAsync(() => log, o => o.StopHostOnFault = true);
        var stopping = new TaskCompletionSource(TaskCreationOptions.RunContinuationsAsynchronously);
        using var registration = server.Lifetime.ApplicationStopping.Register(() => stopping.TrySetResult());
        log.FailAppends = true;

        await Assert.ThrowsAsync<DseCoordinatorException>(() => server.CreateClient().ConnectAsync(new ConnectRequest(1, [])).AsTask());
        await stopping.Task.WaitAsync(TimeSpan.FromSeconds(60));
        await server.StopAsync();

        // What a supervisor does next: a new incarnation on the same log.
        await using var next = await CoordinatorTestServer.StartAsync(() => new InMemoryCoordinatorLog(store));
        Assert.Null(next.Coordinator.Fault);
        Assert.True(next.Coordinator.Incarnation > server.Coordinator.Incarnation);
    }

    [Fact]
    public async Task StopHostOnFault_Off_FaultedHostKeepsRunning()
    {
        var log = new FaultyCoordinatorLog(new InMemoryCoordinatorLogStore());
        await using var server = await CoordinatorTestServer.StartAsync(() => log);
        log.FailAppends = true;

        await Assert.ThrowsAsync<DseCoordinatorException>(() => server.CreateClient().ConnectAsync(new ConnectRequest(1, [])).AsTask());

        // A later call still reaches the (faulted) coordinator: nothing stopped the host.
        var later = await Assert.ThrowsAsync<DseCoordinatorException>(() => server.CreateClient().GetStateAsync().AsTask());
        Assert.Equal(CoordinatorErrorCode.Unavailable, later.Code);
        Assert.False(server.Lifetime.ApplicationStopping.IsCancellationRequested);
    }

    [Fact]
    public async Task Refusals_FaultedCoordinatorRetriedOften_DebugOnlyWhileClientErrorsStayAtInformation()
    {
        var log = new FaultyCoordinatorLog(new InMemoryCoordinatorLogStore());
        await using var server = await CoordinatorTestServer.StartAsync(() => log);
        var client = server.CreateClient();
        await client.ConnectAsync(new ConnectRequest(1, []));
        var invalid = await Assert.ThrowsAsync<DseCoordinatorException>(() => client.ReportPersistedAsync(1, new VersionReport(2, 9, [])).AsTask());
        Assert.Equal(CoordinatorErrorCode.FutureWorldLine, invalid.Code);
        Assert.Equal(1, RefusalsLogged(server.Logs, atInformation: true));

        log.FailAppends = true;
        await Assert.ThrowsAsync<DseCoordinatorException>(() => client.ConnectAsync(new ConnectRequest(2, [])).AsTask());
        for (int i = 0; i < 50; i++)
        {
            await Assert.ThrowsAsync<DseCoordinatorException>(() => client.HeartbeatAsync(1).AsTask());
        }

        Assert.Equal(1, RefusalsLogged(server.Logs, atInformation: true));
        Assert.Equal(51, RefusalsLogged(server.Logs, atInformation: false));
    }

    /// <summary>
    /// The refusal log lines (events 3202 and 3205) at Information and above, or below it; each is written before the
    /// answer is sent.
    /// </summary>
    private static int RefusalsLogged(LogCapture logs, bool atInformation) =>
        logs.Count(entry => entry.EventId.Id is 3202 or 3205 && (entry.Level >= LogLevel.Information) == atInformation);
}
