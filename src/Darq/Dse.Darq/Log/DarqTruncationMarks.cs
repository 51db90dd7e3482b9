namespace Dse.Darq;

/// <summary>
/// Where the commit loop may cut the log without reaching into log memory: step starts recorded about once per log page.
/// </summary>
/// <remarks>
/// <para>FasterLog clears every page it closes: a truncation past the in-memory head closes those pages at once, and
/// the thread that next enters FasterLog's epoch (most often the one stepping or enqueueing) clears them. The same pages
/// are cleared anyway when the tail evicts them, so truncating them early frees no memory (log memory is a fixed ring of
/// pages) and at most a memory's worth of disk sooner; it moves that work onto the hot path, every commit interval.
/// So the commit loop truncates only below the last <see cref="DarqOptions.MemorySize"/> bytes of the log, and
/// <see cref="Darq.TruncateAsync"/>, asked for explicitly, still cuts the whole completed prefix.</para>
/// <para>A cut must fall where a step starts (recovery checks each step whole), and the oldest pending step usually starts
/// in memory. So steps and enqueues record a step start about once per log page (<see cref="DarqOptions.PageSize"/>), and
/// the commit loop cuts at the last recorded one below the head when the completed prefix reaches into memory. What
/// stays of the completed prefix is at most <see cref="DarqOptions.MemorySize"/> plus a page: a restart reads that much
/// more.</para>
/// <para>Every member runs under the DARQ's gate. Invariant: the marks are oldest first, each above the begin address.</para>
/// </remarks>
internal sealed class DarqTruncationMarks
{
    private readonly DarqOptions _options;
    private readonly Queue<StepStart> _marks = new();

    /// <summary>The next step starting at or after this address is recorded.</summary>
    private long _next;

    public DarqTruncationMarks(DarqOptions options)
    {
        _options = options;
    }

    /// <summary>Records <paramref name="start"/> as a place the commit loop may cut, about once per log page.</summary>
    public void NoteStepStart(StepStart start)
    {
        if (start.Lsn >= _next)
        {
            _marks.Enqueue(start);
            _next = start.Lsn + _options.PageSize;
        }
    }

    /// <summary>
    /// Where the commit loop may cut, given <paramref name="start"/>, the start of the oldest step that must stay: that
    /// step itself when log memory no longer holds it, otherwise the last recorded step start below memory, or
    /// <see langword="null"/> when there is none.
    /// </summary>
    public StepStart? BackgroundPoint(StepStart start, long tail)
    {
        // FasterLog does not publish its head address; log memory holds at most MemorySize bytes below the tail, so
        // everything below this bound has left memory (the head is at or above it).
        long head = tail - _options.MemorySize;
        if (start.Lsn <= head)
        {
            return start;
        }

        StepStart? point = null;
        foreach (var mark in _marks)
        {
            if (mark.Lsn > head)
            {
                break;
            }

            point = mark;
        }

        return point;
    }

    /// <summary>Forgets the recorded step starts the log no longer holds (below <paramref name="begin"/>, the new begin address).</summary>
    public void ForgetBelow(long begin)
    {
        while (_marks.TryPeek(out var mark) && mark.Lsn < begin)
        {
            _marks.Dequeue();
        }
    }

    /// <summary>
    /// A restore voided the log from <paramref name="from"/> on: the step starts recorded there are no step starts of
    /// the restored state, whose sequence numbers start over.
    /// </summary>
    public void ForgetFrom(long from)
    {
        var kept = _marks.Where(mark => mark.Lsn < from).ToArray();
        _marks.Clear();
        foreach (var mark in kept)
        {
            _marks.Enqueue(mark);
        }

        _next = 0;
    }
}
