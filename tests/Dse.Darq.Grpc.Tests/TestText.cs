using System.Text;

namespace Dse.Darq.Grpc.Tests;

internal static class TestText
{
    /// <summary>Generous: only a real hang fails a test on it.</summary>
    public static readonly TimeSpan Timeout = TimeSpan.FromSeconds(30);

    public static ReadOnlyMemory<byte> Bytes(this string text) => Encoding.UTF8.GetBytes(text);

    public static string Text(this DarqMessage message) => Encoding.UTF8.GetString(message.Payload.Span);

    /// <summary>Takes the next <paramref name="count"/> messages of a stream, or fails after <see cref="Timeout"/>.</summary>
    public static async Task<List<DarqMessage>> TakeAsync(this IAsyncEnumerator<DarqMessage> messages, int count)
    {
        var taken = new List<DarqMessage>();
        while (taken.Count < count)
        {
            Assert.True(await messages.MoveNextAsync().AsTask().WaitAsync(Timeout), $"the stream ended after {taken.Count} of {count} messages");
            taken.Add(messages.Current);
        }

        return taken;
    }
}
