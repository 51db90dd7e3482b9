using Microsoft.Extensions.Logging;

namespace Dse.Testing;

/// <summary>One log event as <see cref="LogCapture"/> recorded it.</summary>
/// <param name="EventId">The event's id (and name, when the message declares one).</param>
/// <param name="Level">The level it was logged at.</param>
/// <param name="Category">The logger's category (usually the full name of the type that logged).</param>
/// <param name="Message">The formatted message.</param>
/// <param name="Exception">The exception logged with it, if any.</param>
public sealed record LogEntry(EventId EventId, LogLevel Level, string Category, string Message, Exception? Exception)
{
    /// <summary>One line for a failure message: id, level, message and the exception's type and message.</summary>
    public override string ToString() => Exception is null
        ? $"[{EventId.Id} {Level}] {Message}"
        : $"[{EventId.Id} {Level}] {Message} ({Exception.GetType().Name}: {Exception.Message})";
}
