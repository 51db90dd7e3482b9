using Microsoft.Extensions.Logging;

namespace Dse.Testing;

/// <summary>Collects log entries so that tests can assert on them; as a factory, every logger it creates is itself.</summary>
public sealed class ListLogger : ILogger, ILoggerFactory
{
    private readonly List<(LogLevel Level, EventId EventId, string Message, Exception? Exception)> _entries = [];

    public IReadOnlyList<(LogLevel Level, EventId EventId, string Message, Exception? Exception)> Entries
    {
        get
        {
            lock (_entries)
            {
                return [.. _entries];
            }
        }
    }

    public bool Contains(int eventId) => Entries.Any(entry => entry.EventId.Id == eventId);

    public IDisposable? BeginScope<TState>(TState state)
        where TState : notnull => null;

    public bool IsEnabled(LogLevel logLevel) => true;

    public void Log<TState>(LogLevel logLevel, EventId eventId, TState state, Exception? exception, Func<TState, Exception?, string> formatter)
    {
        lock (_entries)
        {
            _entries.Add((logLevel, eventId, formatter(state, exception), exception));
        }
    }

    public ILogger CreateLogger(string categoryName) => this;

    public void AddProvider(ILoggerProvider provider)
    {
    }

    public void Dispose()
    {
    }
}
