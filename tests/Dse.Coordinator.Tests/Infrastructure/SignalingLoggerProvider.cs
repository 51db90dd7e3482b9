using Microsoft.Extensions.Logging;

namespace Dse.Coordinator.Tests.Infrastructure;

/// <summary>Counts log events by id and lets a test wait for the next one: synchronization by event, never by time.</summary>
public sealed class SignalingLoggerProvider(int awaitedEventId) : ILoggerProvider, ILogger
{
    private static readonly TimeSpan Timeout = TimeSpan.FromSeconds(60);
    private readonly SemaphoreSlim _seen = new(0);

    /// <summary>Waits for one more occurrence of the event (one not waited for before).</summary>
    public async Task WaitAsync()
    {
        if (!await _seen.WaitAsync(Timeout))
        {
            throw new TimeoutException($"Log event {awaitedEventId} did not occur within {Timeout}.");
        }
    }

    public ILogger CreateLogger(string categoryName) => this;

    public IDisposable? BeginScope<TState>(TState state)
        where TState : notnull => null;

    public bool IsEnabled(LogLevel logLevel) => true;

    public void Log<TState>(LogLevel logLevel, EventId eventId, TState state, Exception? exception, Func<TState, Exception?, string> formatter)
    {
        if (eventId.Id == awaitedEventId)
        {
            _seen.Release();
        }
    }

    public void Dispose() => _seen.Dispose();
}
