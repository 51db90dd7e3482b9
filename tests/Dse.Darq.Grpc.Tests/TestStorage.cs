using System.Text;
using Dse.Storage;

namespace Dse.Darq.Grpc.Tests;

/// <summary>In-memory storage for one DARQ (log and commit devices) that outlives DARQ instances, to reopen it after a restart.</summary>
internal sealed class TestStorage(string name)
{
    public const long PageSize = 1 << 16;
    public const int MaxMessageSize = 4096;

    public string Name { get; } = name;

    public InMemoryStorage Log { get; } = new();

    public InMemoryStorage Commits { get; } = new();

    /// <summary>Options over fresh devices on this storage; commits only on demand (the gRPC service commits what it must acknowledge).</summary>
    public DarqOptions Options() => new()
    {
        Name = Name,
        LogDevice = DseDevices.CreateInMemory(Log),
        CommitDevice = DseDevices.CreateInMemory(Commits),
        PageSize = PageSize,
        MemorySize = 4 * PageSize,
        SegmentSize = 2 * PageSize,
        MaxMessageSize = MaxMessageSize,
        MaxProducers = 16,
        CommitInterval = Timeout.InfiniteTimeSpan,
        DeliveryRetryMinDelay = TimeSpan.FromMilliseconds(5),
        DeliveryRetryMaxDelay = TimeSpan.FromMilliseconds(100),
    };

    public Task<Darq> OpenAsync(Action<DarqOptions>? configure = null)
    {
        var options = Options();
        configure?.Invoke(options);
        return Darq.OpenAsync(options);
    }
}

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
