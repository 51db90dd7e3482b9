using FASTER.core;

namespace Dse.Darq;

/// <summary>
/// The entries (SELF, OUT, completion) of the step, or the batch of steps, being appended, written back to back into
/// one reusable buffer and handed to FasterLog as batches (which copy them into log memory): no allocation per step
/// once the buffer has grown to the largest step or batch. A window selects the steps one FasterLog batch takes (a
/// FasterLog batch must fit on one page, so a large batch of steps is appended as several).
/// </summary>
internal sealed class DarqStepEntries : IReadOnlySpanBatch
{
    private byte[] _buffer = new byte[4096];

    /// <summary>Entry i spans <c>_ends[i - 1]</c> (0 for the first) to <c>_ends[i]</c> in the buffer.</summary>
    private int[] _ends = new int[4];

    /// <summary>Where each step ends: its entries, its destinations and the log bytes of its entries.</summary>
    private StepBounds[] _steps = new StepBounds[1];

    /// <summary>The entries FasterLog is handed: <c>_windowCount</c> entries from <c>_windowStart</c>.</summary>
    private int _windowStart;
    private int _windowCount;

    public int Count { get; private set; }

    /// <summary>How many steps the entries hold (each ended by <see cref="EndStep"/>).</summary>
    public int StepCount { get; private set; }

    /// <summary>The destinations of the OUT entries, in order (the same string instances the steps named).</summary>
    public List<string> Destinations { get; } = [];

    public void Clear()
    {
        Count = 0;
        StepCount = 0;
        _windowStart = 0;
        _windowCount = 0;
        Destinations.Clear();
    }

    /// <summary>Adds an entry of <paramref name="length"/> bytes and returns its space, to be written completely.</summary>
    public Span<byte> Add(int length)
    {
        int start = Count == 0 ? 0 : _ends[Count - 1];
        if (start + length > _buffer.Length)
        {
            Array.Resize(ref _buffer, Math.Max(_buffer.Length * 2, start + length));
        }

        if (Count == _ends.Length)
        {
            Array.Resize(ref _ends, _ends.Length * 2);
        }

        _ends[Count++] = start + length;
        return _buffer.AsSpan(start, length);
    }

    /// <summary>Ends the step whose entries were added since the previous one ended, and widens the window to every entry.</summary>
    public void EndStep()
    {
        var previous = StepCount == 0 ? default : _steps[StepCount - 1];
        long footprint = 0;
        for (int i = previous.EntryEnd; i < Count; i++)
        {
            footprint += DarqEntryFormat.LogFootprint(Length(i));
        }

        if (StepCount == _steps.Length)
        {
            Array.Resize(ref _steps, _steps.Length * 2);
        }

        _steps[StepCount++] = new StepBounds(Count, Destinations.Count, previous.Footprint + footprint);
        _windowStart = 0;
        _windowCount = Count;
    }

    /// <summary>Step <paramref name="step"/>'s entries and destinations, as [start, end) ranges.</summary>
    public (int EntryStart, int EntryEnd, int DestinationStart, int DestinationEnd) Step(int step)
    {
        var previous = step == 0 ? default : _steps[step - 1];
        var bounds = _steps[step];
        return (previous.EntryEnd, bounds.EntryEnd, previous.DestinationEnd, bounds.DestinationEnd);
    }

    /// <summary>
    /// The end (exclusive) of the longest run of steps from <paramref name="firstStep"/> whose entries take at most
    /// <paramref name="limit"/> log bytes; at least one step (each step alone fits, as checked before the gate).
    /// </summary>
    public int ChunkEnd(int firstStep, long limit)
    {
        long before = firstStep == 0 ? 0 : _steps[firstStep - 1].Footprint;
        int end = firstStep + 1;
        while (end < StepCount && _steps[end].Footprint - before <= limit)
        {
            end++;
        }

        return end;
    }

    /// <summary>The log bytes step <paramref name="step"/>'s entries take.</summary>
    public long StepFootprint(int step) => _steps[step].Footprint - (step == 0 ? 0 : _steps[step - 1].Footprint);

    /// <summary>Makes FasterLog see only the entries of steps <paramref name="firstStep"/> to <paramref name="endStep"/> (exclusive).</summary>
    public void Window(int firstStep, int endStep)
    {
        _windowStart = firstStep == 0 ? 0 : _steps[firstStep - 1].EntryEnd;
        _windowCount = _steps[endStep - 1].EntryEnd - _windowStart;
    }

    public int Length(int index) => _ends[index] - (index == 0 ? 0 : _ends[index - 1]);

    /// <summary>Entry <paramref name="index"/> of all the entries (not of the window).</summary>
    public ReadOnlySpan<byte> Entry(int index)
    {
        int start = index == 0 ? 0 : _ends[index - 1];
        return _buffer.AsSpan(start, _ends[index] - start);
    }

    int IReadOnlySpanBatch.TotalEntries() => _windowCount;

    ReadOnlySpan<byte> IReadOnlySpanBatch.Get(int index) => Entry(_windowStart + index);

    /// <summary>Where a step ends: its entries and destinations (exclusive), and the log bytes of all steps up to it.</summary>
    private readonly record struct StepBounds(int EntryEnd, int DestinationEnd, long Footprint);
}
