using System.Numerics;
using System.Diagnostics;
using System.Runtime.InteropServices;

namespace Dse;

/// <summary>
/// Reader/writer protection between actions (readers, many at once) and Persist/Restore (one writer). Readers touch
/// only a per-processor striped counter, so entering scales across cores; an action may enter on one thread and exit
/// on another (handlers await), because only the sum of the stripes matters.
/// </summary>
/// <remarks>
/// Invariant: while <see cref="_closed"/> is 1 no reader stays inside once it has seen the flag, and
/// <see cref="CloseAsync"/> returns only after a scan found the stripes summing to zero. Every stripe change and the flag
/// change are full fences, so a reader that enters after the flag is set always sees it (Dekker-style ordering). A scan
/// never reads zero while a reader is inside: a successful reader's +1 precedes the scan (it entered before the flag),
/// and its -1, on whatever stripe, is counted only if it happened; a failed entry's +1 and -1 hit the same stripe, so it
/// adds 0 or 1 to a scan, never -1. A negative sum therefore means an exit without an entry (misuse), reported as such.
/// At most one writer at a time; the owner serializes writers.
/// </remarks>
internal sealed class ActionGate
{
    private readonly Stripe[] _stripes;
    private readonly int _mask;
    private int _closed;
    private TaskCompletionSource _opened;
    private TaskCompletionSource? _drained;

    public ActionGate()
    {
        int n = (int)BitOperations.RoundUpToPowerOf2((uint)Math.Max(2, Environment.ProcessorCount * 2));
        _stripes = new Stripe[n];
        _mask = n - 1;
        _opened = NewSignal();
        _opened.TrySetResult();
    }

    /// <summary>Whether a writer holds or is acquiring the gate.</summary>
    public bool IsClosed => Volatile.Read(ref _closed) != 0;

    /// <summary>Enters as a reader unless a writer holds or waits for the gate.</summary>
    public bool TryEnter()
    {
        ref long stripe = ref _stripes[Thread.GetCurrentProcessorId() & _mask].Count;
        Interlocked.Increment(ref stripe);
        if (Volatile.Read(ref _closed) == 0)
        {
            return true;
        }

        // Back out on the same stripe: a failed entry straddling a scan must add nothing to it, and the processor id
        // may have changed since the increment.
        Interlocked.Decrement(ref stripe);
        Volatile.Read(ref _drained)?.TrySetResult();
        return false;
    }

    /// <summary>Leaves as a reader (on any thread).</summary>
    public void Exit()
    {
        Interlocked.Decrement(ref _stripes[Thread.GetCurrentProcessorId() & _mask].Count);
        if (Volatile.Read(ref _closed) != 0)
        {
            Volatile.Read(ref _drained)?.TrySetResult();
        }
    }

    /// <summary>Completes when the gate is open (it may close again before the caller retries).</summary>
    public Task WaitOpenAsync() => Volatile.Read(ref _opened).Task;

    /// <summary>Closes the gate to new readers and completes once every reader inside has left.</summary>
    public ValueTask CloseAsync()
    {
        Debug.Assert(Volatile.Read(ref _closed) == 0, "One writer at a time.");
        Volatile.Write(ref _opened, NewSignal());
        Interlocked.Exchange(ref _closed, 1);
        var drained = NewSignal();
        Interlocked.Exchange(ref _drained, drained);
        return Sum() == 0 ? ValueTask.CompletedTask : DrainSlowAsync(drained);
    }

    /// <summary>Reopens the gate and releases waiting readers.</summary>
    public void Open()
    {
        Debug.Assert(Volatile.Read(ref _closed) == 1, "Open without Close.");
        Volatile.Write(ref _drained, null);
        Interlocked.Exchange(ref _closed, 0);
        Volatile.Read(ref _opened).TrySetResult();
    }

    private static TaskCompletionSource NewSignal() => new(TaskCreationOptions.RunContinuationsAsynchronously);

    private async ValueTask DrainSlowAsync(TaskCompletionSource drained)
    {
        while (true)
        {
            await drained.Task.ConfigureAwait(false);

            // Publish the next signal before scanning, so an exit after the scan signals the one awaited next.
            drained = NewSignal();
            Interlocked.Exchange(ref _drained, drained);
            if (Sum() == 0)
            {
                return;
            }
        }
    }

    private long Sum()
    {
        long sum = 0;
        for (int i = 0; i < _stripes.Length; i++)
        {
            sum += Volatile.Read(ref _stripes[i].Count);
        }

        if (sum < 0)
        {
            throw new InvalidOperationException("An action was ended more often than started (EndAction or Detach without a matching start).");
        }

        return sum;
    }

    // One counter per cache-line pair, so readers on different cores never share a line.
    [StructLayout(LayoutKind.Explicit, Size = 128)]
    private struct Stripe
    {
        [FieldOffset(64)]
        public long Count;
    }
}
