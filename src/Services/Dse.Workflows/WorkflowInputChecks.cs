using System.Text;
using System.Text.Json;

namespace Dse.Workflows;

/// <summary>Checks of what callers hand the engine, before anything is recorded.</summary>
internal static class WorkflowInputChecks
{
    /// <summary>Throws unless <paramref name="id"/> is a usable workflow id.</summary>
    /// <exception cref="ArgumentException">The id is empty or longer than <see cref="HistoryCodec.MaxIdBytes"/>.</exception>
    public static void CheckId(string id)
    {
        ArgumentException.ThrowIfNullOrWhiteSpace(id);
        if (Encoding.UTF8.GetByteCount(id) > HistoryCodec.MaxIdBytes)
        {
            throw new ArgumentException($"A workflow id is at most {HistoryCodec.MaxIdBytes} UTF-8 bytes.", nameof(id));
        }
    }

    /// <summary>Throws unless <paramref name="payload"/> is exactly one JSON value.</summary>
    /// <exception cref="ArgumentException">It is not; the message says why.</exception>
    public static void CheckJson(ReadOnlyMemory<byte> payload, string parameter)
    {
        try
        {
            var reader = new Utf8JsonReader(payload.Span);
            if (!reader.Read() || !reader.TrySkip() || reader.Read())
            {
                throw new ArgumentException("The payload is not one JSON value.", parameter);
            }
        }
        catch (JsonException ex)
        {
            throw new ArgumentException($"The payload is not JSON: {ex.Message}", parameter, ex);
        }
    }
}
