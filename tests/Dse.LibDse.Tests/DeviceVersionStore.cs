using System.Buffers.Binary;
using Dse.Storage;

namespace Dse.Tests;

/// <summary>
/// A version store on real storage: a <see cref="SnapshotLog"/> on a <see cref="FaultInjectingDevice"/> over an
/// <see cref="InMemoryDevice"/> whose <see cref="InMemoryStorage"/> survives crashes. Persists queue until the test
/// completes them (each append awaited, so runs stay deterministic); a crash may tear the write in flight with a crash
/// cut, and the next instance recovers by scanning the device.
/// </summary>
internal sealed class DeviceVersionStore : IVersionStore
{
    private readonly InMemoryStorage _storage = new();
    private readonly List<(long Version, byte[] Payload, PersistCompletion Completion)> _pending = [];
    private FaultInjectingDevice? _device;
    private SnapshotLog? _log;
    private long _pruneThrough;
    private long _prunedThrough;

    public int TornWrites { get; private set; }

    public static async Task<DeviceVersionStore> CreateAsync()
    {
        var store = new DeviceVersionStore();
        await store.ReopenAsync();
        return store;
    }

    public void Add(long version, byte[] metadata, long[] history, PersistCompletion completion)
    {
        var payload = new byte[4 + metadata.Length + (8 * history.Length)];
        BinaryPrimitives.WriteInt32LittleEndian(payload, metadata.Length);
        metadata.CopyTo(payload, 4);
        for (int i = 0; i < history.Length; i++)
        {
            BinaryPrimitives.WriteInt64LittleEndian(payload.AsSpan(4 + metadata.Length + (8 * i)), history[i]);
        }

        _pending.Add((version, payload, completion));
    }

    public async Task<int> CompleteOldestAsync(int count)
    {
        var log = _log;
        if (log is null)
        {
            return 0;   // crashed and not reopened yet: nothing is in flight
        }

        int done = 0;
        while (done < count && _pending.Count > 0)
        {
            var (version, payload, completion) = _pending[0];
            _pending.RemoveAt(0);
            await log.AppendAsync((ulong)version, payload);
            completion.SetDurable();
            done++;
        }

        if (_pruneThrough > _prunedThrough)
        {
            await log.TruncateBeforeAsync((ulong)_pruneThrough + 1);
            _prunedThrough = _pruneThrough;
        }

        return done;
    }

    public async Task CrashAsync(Random random)
    {
        if (_pending.Count > 0 && random.Next(2) == 0)
        {
            // The machine died while the oldest write was on its way: some of its parts may reach the device, the
            // header (written last) does not. Nobody hears of it.
            _device!.CutAfter(_device.WritesIssued + random.Next(0, 2));
            await _log!.AppendAsync((ulong)_pending[0].Version, _pending[0].Payload);
            TornWrites++;
        }
        else
        {
            _device!.CutNow();
        }

        _pending.Clear();
        await _log!.DisposeAsync();
        _device.Dispose();
        _log = null;
    }

    public async Task ReopenAsync()
    {
        var inner = new InMemoryDevice(_storage, new InMemoryDeviceOptions { CompleteSynchronously = true });
        _device = new FaultInjectingDevice(inner);
        _log = await SnapshotLog.OpenAsync(_device, new SnapshotLogOptions { SegmentSize = 1 << 16 });
        _prunedThrough = _pruneThrough = 0;
    }

    public async ValueTask<long[]?> RestoreAsync(long version)
    {
        _pending.Clear();
        await _log!.DropAfterAsync((ulong)version);
        if (version == 0)
        {
            return null;
        }

        var record = _log.Records.LastOrDefault(r => r.Key == (ulong)version)
            ?? throw new InvalidOperationException($"Version {version} is not in the snapshot log (have: {string.Join(",", _log.Records.Select(r => r.Key))}).");
        var (_, history) = Split(record.Payload);
        return history;
    }

    public void PruneThrough(long version) => _pruneThrough = Math.Max(_pruneThrough, version);

    public IReadOnlyList<PersistedVersion> List() =>
        _log!.Records.Select(r => new PersistedVersion((long)r.Key, Split(r.Payload).Metadata)).ToList();

    private static (byte[] Metadata, long[] History) Split(ReadOnlyMemory<byte> payload)
    {
        var span = payload.Span;
        int metaLength = BinaryPrimitives.ReadInt32LittleEndian(span);
        var history = new long[(span.Length - 4 - metaLength) / 8];
        for (int i = 0; i < history.Length; i++)
        {
            history[i] = BinaryPrimitives.ReadInt64LittleEndian(span[(4 + metaLength + (8 * i))..]);
        }

        return (span.Slice(4, metaLength).ToArray(), history);
    }
}
