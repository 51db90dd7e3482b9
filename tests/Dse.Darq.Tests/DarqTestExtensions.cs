using System.Text;

namespace Dse.Darq.Tests;

internal static class DarqTestExtensions
{
    public static ReadOnlyMemory<byte> Bytes(this string text) => Encoding.UTF8.GetBytes(text);

    public static string Text(this DarqMessage message) => Encoding.UTF8.GetString(message.Payload.Span);

    /// <summary>Everything already in the processor's stream (replay is written at registration, live messages at enqueue).</summary>
    public static List<DarqMessage> Drain(this DarqProcessor processor)
    {
        var messages = new List<DarqMessage>();
        while (processor.Messages.TryRead(out var message))
        {
            messages.Add(message);
        }

        return messages;
    }
}
