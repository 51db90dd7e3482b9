using System.Collections.Concurrent;
using System.Diagnostics;

namespace Dse.Storage;

/// <summary>
/// The contents of one or more <see cref="InMemoryDevice"/> instances: segment id to bytes, thread-safe.
/// It outlives the devices over it, so a test can dispose a "crashed" device and open a new one over the
/// same storage to see exactly what had been written.
/// </summary>
/// <remarks>
/// A segment exists once any byte of it has been written and until it is removed. Reading an existing segment
/// past its highest written byte yields zeros, as on a preallocated file or page blob.
/// </remarks>
public sealed class InMemoryStorage
{
    private readonly ConcurrentDictionary<int, Segment> _segments = new();

    /// <summary>Creates empty storage.</summary>
    public InMemoryStorage()
    {
    }

    /// <summary>The ids of the segments that currently exist, in ascending order (a snapshot).</summary>
    public IReadOnlyList<int> SegmentIds
    {
        get
        {
            var ids = new List<int>(_segments.Keys);
            ids.Sort();
            return ids;
        }
    }

    /// <summary>The sum over all segments of their written length in bytes.</summary>
    public long TotalBytes
    {
        get
        {
            long total = 0;
            foreach (var segment in _segments.Values)
            {
                lock (segment)
                {
                    total += segment.Length;
                }
            }

            return total;
        }
    }

    /// <summary>Whether a segment with this id exists.</summary>
    /// <param name="segmentId">The segment id.</param>
    public bool ContainsSegment(int segmentId) => _segments.ContainsKey(segmentId);

    /// <summary>Gets the length of a segment: one past its highest written byte.</summary>
    /// <param name="segmentId">The segment id.</param>
    /// <param name="length">The length, or 0 when the segment does not exist.</param>
    /// <returns><see langword="true"/> when the segment exists.</returns>
    public bool TryGetSegmentLength(int segmentId, out long length)
    {
        if (_segments.TryGetValue(segmentId, out var segment))
        {
            lock (segment)
            {
                if (!segment.Removed)
                {
                    length = segment.Length;
                    return true;
                }
            }
        }

        length = 0;
        return false;
    }

    /// <summary>Writes bytes into a segment, creating the segment if needed.</summary>
    /// <param name="segmentId">The segment id (nonnegative).</param>
    /// <param name="offset">The byte offset inside the segment.</param>
    /// <param name="source">The bytes to write.</param>
    /// <exception cref="ArgumentOutOfRangeException">The segment id or offset is negative, or the range exceeds the largest array.</exception>
    public void Write(int segmentId, long offset, ReadOnlySpan<byte> source)
    {
        ArgumentOutOfRangeException.ThrowIfNegative(segmentId);
        ArgumentOutOfRangeException.ThrowIfNegative(offset);
        long end = offset + source.Length;
        if (end > Array.MaxLength)
        {
            throw new ArgumentOutOfRangeException(nameof(offset), offset,
                $"An in-memory segment holds at most {Array.MaxLength} bytes; the write would end at {end}.");
        }

        while (true)
        {
            var segment = _segments.GetOrAdd(segmentId, static _ => new Segment());
            lock (segment)
            {
                // A concurrent RemoveSegment may have detached this instance; retry on a fresh one.
                if (segment.Removed)
                {
                    continue;
                }

                segment.EnsureCapacity((int)end);
                source.CopyTo(segment.Data.AsSpan((int)offset));
                if (end > segment.Length)
                {
                    segment.Length = end;
                }

                Debug.Assert(segment.Length <= segment.Data.Length, "the written length never exceeds the array");

                return;
            }
        }
    }

    /// <summary>Reads bytes from a segment; bytes past the written length read as zeros.</summary>
    /// <param name="segmentId">The segment id.</param>
    /// <param name="offset">The byte offset inside the segment.</param>
    /// <param name="destination">Receives the bytes; filled completely when the segment exists.</param>
    /// <returns><see langword="false"/> when the segment does not exist (the destination is left untouched).</returns>
    public bool TryRead(int segmentId, long offset, Span<byte> destination)
    {
        ArgumentOutOfRangeException.ThrowIfNegative(offset);
        if (!_segments.TryGetValue(segmentId, out var segment))
        {
            return false;
        }

        lock (segment)
        {
            if (segment.Removed)
            {
                return false;
            }

            long available = Math.Max(0, Math.Min(segment.Length - offset, destination.Length));
            if (available > 0)
            {
                segment.Data.AsSpan((int)offset, (int)available).CopyTo(destination);
            }

            destination[(int)available..].Clear();
            return true;
        }
    }

    /// <summary>Removes a segment and its contents.</summary>
    /// <param name="segmentId">The segment id.</param>
    /// <returns><see langword="true"/> when the segment existed.</returns>
    public bool RemoveSegment(int segmentId)
    {
        if (!_segments.TryRemove(segmentId, out var segment))
        {
            return false;
        }

        lock (segment)
        {
            segment.Removed = true;
        }

        return true;
    }

    /// <summary>Returns an independent deep copy of the current contents (a point-in-time image).</summary>
    public InMemoryStorage Clone()
    {
        var copy = new InMemoryStorage();
        foreach (var (id, segment) in _segments)
        {
            lock (segment)
            {
                if (segment.Removed)
                {
                    continue;
                }

                var clone = new Segment { Data = segment.Data.AsSpan(0, (int)segment.Length).ToArray(), Length = segment.Length };
                copy._segments[id] = clone;
            }
        }

        return copy;
    }

    /// <summary>One segment; every field is guarded by locking the instance.</summary>
    private sealed class Segment
    {
        public byte[] Data = [];

        /// <summary>One past the highest written byte; invariant: <c>Length &lt;= Data.Length</c>.</summary>
        public long Length;

        /// <summary>Set once the segment has been detached from the storage; writers then retry on a new one.</summary>
        public bool Removed;

        public void EnsureCapacity(int required)
        {
            if (Data.Length >= required)
            {
                return;
            }

            // Grow geometrically so that sequential appends copy O(n) bytes in total.
            long grown = Math.Max(required, Math.Min((long)Data.Length * 2, Array.MaxLength));
            Array.Resize(ref Data, (int)Math.Max(grown, 4096));
        }
    }
}
