using System.Buffers.Binary;
using Dse.Testing;

namespace Dse.Darq.Tests;

/// <summary>
/// Recovery over a committed entry whose FasterLog length field was damaged (found by the fuzzing harness): every value
/// must end the open with <see cref="InvalidDataException"/>, never a hang.
/// </summary>
[Trait("Category", "Recovery")]
public sealed class DarqDamagedLengthTests
{
    [Theory]
    [InlineData(int.MinValue)]
    [InlineData(int.MaxValue)]
    [InlineData(-1)]
    [InlineData(-48)]
    [InlineData(1 << 20)]
    public async Task Open_CommittedEntryWithDamagedLength_RefusedAsInvalidData(int length)
    {
        var storage = new DarqTestStorage();
        long lsn;
        await using (var darq = await storage.OpenAsync())
        {
            lsn = (await darq.EnqueueAsync(new byte[] { 1, 2, 3 })).Lsn;
            await darq.EnqueueAsync(new byte[] { 4, 5, 6 });
            await darq.CommitAsync();
        }

        var field = new byte[4];
        BinaryPrimitives.WriteInt32LittleEndian(field, length);
        storage.Log.Write((int)(lsn / DarqTestStorage.SegmentSize), lsn % DarqTestStorage.SegmentSize, field);

        var open = storage.OpenAsync();
        var ended = await Task.WhenAny(open, Task.Delay(TimeSpan.FromSeconds(30)));
        Assert.True(ended == open, $"the open did not end within 30 s (length field {length} at LSN {lsn})");
        await Assert.ThrowsAsync<InvalidDataException>(() => open);
    }
}
