using System.Collections.Concurrent;

namespace Dse.Workflows.Tests;

/// <summary>
/// A speculative service in process: counts the calls it acted on by idempotency key, acting once per key. Its versions
/// are durable only when <see cref="Durable"/> is set, in <see cref="Storage"/>, which outlives an instance.
/// </summary>
internal sealed class CountingService(DseOptions options, ConcurrentDictionary<long, (Dictionary<string, int> State, byte[] Metadata)> storage, bool durable) : StateObject(options)
{
    private readonly Lock _lock = new();
    private Dictionary<string, int> _acted = [];

    public ConcurrentDictionary<long, (Dictionary<string, int> State, byte[] Metadata)> Storage { get; } = storage;

    public bool Durable { get; } = durable;

    /// <summary>
    /// Calls the service from the flow's bound sthread (a workflow step) and receives the reply's header. The service acts
    /// once per key: true if this call acted, false if the key had acted already.
    /// </summary>
    public async Task<bool> CallAsync(string key, CancellationToken cancellationToken)
    {
        var sthread = Dse.Grpc.DseCall.Current ?? throw new InvalidOperationException("No sthread is bound: not called from a step.");
        if (!await StartActionAsync(sthread.Send(), cancellationToken))
        {
            throw new DseRolledBackException("The call came from rolled-back state.");
        }

        bool acted;
        lock (_lock)
        {
            acted = _acted.TryAdd(key, 1);
        }

        var reply = EndAction();
        if (!await sthread.ReceiveAsync(reply, cancellationToken))
        {
            throw new DseRolledBackException("The reply came from rolled-back state.");
        }

        return acted;
    }

    /// <summary>How many distinct acts this instance's state holds for <paramref name="key"/> (0 or 1).</summary>
    public int Acted(string key)
    {
        lock (_lock)
        {
            return _acted.ContainsKey(key) ? 1 : 0;
        }
    }

    /// <summary>The keys this instance's state holds.</summary>
    public IReadOnlyList<string> ActedKeys()
    {
        lock (_lock)
        {
            return [.. _acted.Keys];
        }
    }

    protected override void Persist(long version, ReadOnlyMemory<byte> metadata, PersistCompletion completion)
    {
        if (!Durable)
        {
            return; // never durable: the version dies with the instance
        }

        lock (_lock)
        {
            Storage[version] = (new Dictionary<string, int>(_acted), metadata.ToArray());
        }

        completion.SetDurable();
    }

    protected override ValueTask<ReadOnlyMemory<byte>> RestoreAsync(long version, CancellationToken cancellationToken)
    {
        lock (_lock)
        {
            if (Storage.TryGetValue(version, out var stored))
            {
                _acted = new Dictionary<string, int>(stored.State);
                return ValueTask.FromResult<ReadOnlyMemory<byte>>(stored.Metadata);
            }

            _acted = [];
        }

        return ValueTask.FromResult(ReadOnlyMemory<byte>.Empty);
    }

    protected override void Prune(long version)
    {
    }

    protected override ValueTask<IReadOnlyList<PersistedVersion>> ListVersionsAsync(CancellationToken cancellationToken) =>
        ValueTask.FromResult<IReadOnlyList<PersistedVersion>>([.. Storage.OrderBy(p => p.Key).Select(p => new PersistedVersion(p.Key, p.Value.Metadata))]);
}
