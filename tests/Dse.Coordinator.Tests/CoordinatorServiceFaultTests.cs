using Dse.Coordinator.Tests.Infrastructure;
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
        using var refusals = new RefusalCounter();
        await using var server = await CoordinatorTestServer.StartAsync(() => log, logs: refusals);
        var client = server.CreateClient();
        await client.ConnectAsync(new ConnectRequest(1, []));
        var invalid = await Assert.ThrowsAsync<DseCoordinatorException>(() => client.ReportPersistedAsync(1, new VersionReport(2, 9, [])).AsTask());
        Assert.Equal(CoordinatorErrorCode.FutureWorldLine, invalid.Code);
        Assert.Equal(1, refusals.AtInformation);

        log.FailAppends = true;
        await Assert.ThrowsAsync<DseCoordinatorException>(() => client.ConnectAsync(new ConnectRequest(2, [])).AsTask());
        for (int i = 0; i < 50; i++)
        {
            await Assert.ThrowsAsync<DseCoordinatorException>(() => client.HeartbeatAsync(1).AsTask());
        }

        Assert.Equal(1, refusals.AtInformation);
        Assert.Equal(51, refusals.AtDebug);
    }

    /// <summary>Counts refusal log lines (events 3202 and 3205) by level; each is written before the answer is sent.</summary>
    private sealed class RefusalCounter : ILoggerProvider, ILogger
    {
        private int _information;
        private int _debug;

        public int AtInformation => Volatile.Read(ref _information);

        public int AtDebug => Volatile.Read(ref _debug);

        public ILogger CreateLogger(string categoryName) => this;

        public IDisposable? BeginScope<TState>(TState state)
            where TState : notnull => null;

        public bool IsEnabled(LogLevel logLevel) => true;

        public void Log<TState>(LogLevel logLevel, EventId eventId, TState state, Exception? exception, Func<TState, Exception?, string> formatter)
        {
            if (eventId.Id is not (3202 or 3205))
            {
                return;
            }

            if (logLevel >= LogLevel.Information)
            {
                Interlocked.Increment(ref _information);
            }
            else
            {
                Interlocked.Increment(ref _debug);
            }
        }

        public void Dispose()
        {
        }
    }
}
