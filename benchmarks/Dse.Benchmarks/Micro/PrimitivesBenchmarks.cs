using BenchmarkDotNet.Attributes;

namespace Dse.Benchmarks.Micro;

/// <summary>
/// The LibDse hot paths one operation at a time, without the background version advance (the harness's
/// <c>primitives</c> scenario measures them with it): what an action, a received message and an sthread round trip cost.
/// </summary>
[MemoryDiagnoser]
public class PrimitivesBenchmarks
{
    // Distinct senders of the received headers (a power of two: the slot is an index mask).
    private const int Senders = 64;

    private readonly byte[] _incoming = new byte[Senders * DseHeader.OriginLength];
    private readonly byte[] _outgoing = new byte[DseHeader.OriginLength];
    private NoopStateObject _so = null!;
    private int _next;

    [GlobalSetup]
    public async Task SetupAsync()
    {
        _so = await NoopStateObject.ConnectNewAsync(new ClusterCoordinator(), 1, runBackgroundTasks: false, TimeSpan.FromMilliseconds(10));
        for (int i = 0; i < 7; i++)
        {
            await _so.AdvanceVersionAsync();
        }

        for (int i = 0; i < Senders; i++)
        {
            DseHeader.FromOrigin(1_000 + i, 0, 1 + (i % _so.CurrentVersion)).WriteTo(_incoming.AsSpan(i * DseHeader.OriginLength));
        }
    }

    [GlobalCleanup]
    public async Task CleanupAsync() => await _so.DisposeAsync();

    /// <summary>Start and end an action that consumes no message.</summary>
    [Benchmark(Baseline = true)]
    public DseHeader LocalAction()
    {
        if (!_so.TryStartLocalAction())
        {
            throw new InvalidOperationException("Nothing advances the version here; a local action must start.");
        }

        return _so.EndAction();
    }

    /// <summary>Parse a received header, start an action consuming it (recording the dependency), end it, encode the reply's header.</summary>
    [Benchmark]
    public int SendReceive()
    {
        int slot = _next++ & (Senders - 1);
        var incoming = DseHeader.Parse(_incoming.AsSpan(slot * DseHeader.OriginLength, DseHeader.OriginLength));
        if (_so.TryStartAction(in incoming) != StartActionStatus.Accepted)
        {
            throw new InvalidOperationException($"The header {incoming} did not start an action.");
        }

        return _so.EndAction().WriteTo(_outgoing);
    }

    /// <summary>Start a local action, detach it into an sthread, merge the sthread back, end.</summary>
    [Benchmark]
    public DseHeader DetachMerge()
    {
        if (!_so.TryStartLocalAction())
        {
            throw new InvalidOperationException("Nothing advances the version here; a local action must start.");
        }

        var sthread = _so.Detach();
        if (_so.TryMerge(sthread) != StartActionStatus.Accepted)
        {
            throw new InvalidOperationException("Nothing rolls back here; the merge must start an action.");
        }

        return _so.EndAction();
    }

    /// <summary>Build an origin header and encode it (the version varies so the JIT cannot fold the header away).</summary>
    [Benchmark]
    public int HeaderEncode() => DseHeader.FromOrigin(1, 0, _next++ & 0xFFFF).WriteTo(_outgoing);

    /// <summary>Decode an origin header.</summary>
    [Benchmark]
    public DseHeader HeaderParse() => DseHeader.Parse(_incoming.AsSpan(0, DseHeader.OriginLength));
}
