using Microsoft.Extensions.Logging;

namespace Dse.Darq.Grpc.Tests;

/// <summary>Records log events (id and message) of a server, and lets a test await one.</summary>
internal sealed class LogCapture : ILoggerProvider
{
    private readonly Lock _lock = new();
    private readonly List<(int Id, string Message)> _events = [];
    private readonly List<(Func<int, string, bool> Match, TaskCompletionSource<string> Done)> _waiters = [];

    public ILogger CreateLogger(string categoryName) => new Logger(this);

    /// <summary>Completes with the message of the first event (past or future) with this id whose message contains <paramref name="text"/>.</summary>
    public Task<string> WaitForAsync(int eventId, string text)
    {
        bool Match(int id, string message) => id == eventId && message.Contains(text, StringComparison.Ordinal);
        lock (_lock)
        {
            foreach (var (id, message) in _events)
            {
                if (Match(id, message))
                {
                    return Task.FromResult(message);
                }
            }

            var done = new TaskCompletionSource<string>(TaskCreationOptions.RunContinuationsAsynchronously);
            _waiters.Add((Match, done));
            return done.Task;
        }
    }

    public void Dispose()
    {
    }

    private void Add(int id, string message)
    {
        lock (_lock)
        {
            _events.Add((id, message));
            for (int i = _waiters.Count - 1; i >= 0; i--)
            {
                if (_waiters[i].Match(id, message))
                {
                    _waiters[i].Done.TrySetResult(message);
                    _waiters.RemoveAt(i);
                }
            }
        }
    }

    private sealed class Logger(LogCapture capture) : ILogger
    {
        public IDisposable? BeginScope<TState>(TState state)
            where TState : notnull => null;

        public bool IsEnabled(LogLevel logLevel) => true;

        public void Log<TState>(LogLevel logLevel, EventId eventId, TState state, Exception? exception, Func<TState, Exception?, string> formatter)
            => capture.Add(eventId.Id, formatter(state, exception));
    }
}
