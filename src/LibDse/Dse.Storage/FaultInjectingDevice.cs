using FASTER.core;
using Microsoft.Extensions.Logging;
using Microsoft.Extensions.Logging.Abstractions;

namespace Dse.Storage;

/// <summary>
/// Wraps a device and injects storage faults deterministically: transient write/read errors (the next N, or a
/// seeded probability), permanent failure from a chosen write on, and a crash cut after which writes are
/// acknowledged but silently lost.
/// </summary>
/// <remarks>
/// <para>Every write gets an ordinal (1, 2, ...) in issue order; <see cref="WritesIssued"/> is the last one handed out.
/// For each write the first matching rule applies:</para>
/// <list type="number">
/// <item><description>permanent failure armed for this ordinal: completes with <see cref="DeviceErrorCodes.DeviceFailed"/>, not written;</description></item>
/// <item><description>after the crash cut: completes successfully but is not forwarded (lost, like data still in a volatile cache when a machine dies);</description></item>
/// <item><description>a transient fault is due (<see cref="FailNextWrites"/> or the seeded probability): completes with <see cref="DeviceErrorCodes.InjectedFault"/>, not written;</description></item>
/// <item><description>otherwise it is forwarded to the inner device.</description></item>
/// </list>
/// <para>Reads are forwarded (even after a cut: they see only what reached the inner device) unless the device has
/// failed permanently or a read fault is due. Segment removals after a cut are dropped, under permanent failure they
/// are skipped. Failed and dropped requests complete inline on the calling thread. Decisions are made under a lock
/// in issue order, so a single-threaded workload with a fixed seed always sees the same faults.</para>
/// <para>To see what survived a cut, dispose the owner, then open a new device over the inner storage.</para>
/// </remarks>
public sealed class FaultInjectingDevice : DelegatingDevice
{
    private const long Never = long.MaxValue;

    private readonly ILogger _logger;

    /// <summary>Guards every field below that is not a counter, and makes fault decisions in issue order.</summary>
    private readonly Lock _gate = new();
    private readonly Random _random;
    private long _writesIssued;
    private long _cutAfter = Never;
    private long _failAfter = Never;
    private int _failNextWrites;
    private int _failNextReads;
    private double _writeFailureProbability;
    private double _readFailureProbability;

    private long _writesForwarded;
    private long _writesDropped;
    private long _writesFailed;
    private long _readsForwarded;
    private long _readsFailed;
    private long _removesDropped;

    /// <summary>Wraps <paramref name="inner"/>; no fault is armed unless <paramref name="options"/> sets a probability.</summary>
    /// <param name="inner">The device to forward to.</param>
    /// <param name="options">Seed and fault probabilities; <see langword="null"/> for none.</param>
    /// <param name="ownsInner">Whether disposing this device disposes <paramref name="inner"/>. Default <see langword="true"/>.</param>
    /// <param name="logger">Receives errors thrown by completion callbacks; <see langword="null"/> for none.</param>
    public FaultInjectingDevice(IDevice inner, FaultInjectingDeviceOptions? options = null, bool ownsInner = true, ILogger? logger = null)
        : base(inner, ownsInner)
    {
        options ??= new FaultInjectingDeviceOptions();
        options.Validate();
        _random = new Random(options.Seed);
        _writeFailureProbability = options.WriteFailureProbability;
        _readFailureProbability = options.ReadFailureProbability;
        _logger = logger ?? NullLogger.Instance;
    }

    /// <summary>The number of writes issued so far (the ordinal of the latest write), whatever became of them.</summary>
    public long WritesIssued
    {
        get
        {
            lock (_gate)
            {
                return _writesIssued;
            }
        }
    }

    /// <summary>Writes passed to the inner device.</summary>
    public long WritesForwarded => Interlocked.Read(ref _writesForwarded);

    /// <summary>Writes acknowledged as successful but lost because they came after the crash cut.</summary>
    public long WritesDropped => Interlocked.Read(ref _writesDropped);

    /// <summary>Writes completed with an injected error code (transient or permanent).</summary>
    public long WritesFailed => Interlocked.Read(ref _writesFailed);

    /// <summary>Reads passed to the inner device.</summary>
    public long ReadsForwarded => Interlocked.Read(ref _readsForwarded);

    /// <summary>Reads completed with an injected error code.</summary>
    public long ReadsFailed => Interlocked.Read(ref _readsFailed);

    /// <summary>Segment removals dropped after the crash cut or skipped under permanent failure.</summary>
    public long RemovesDropped => Interlocked.Read(ref _removesDropped);

    /// <summary>The ordinal of the last write that is still forwarded, or <see langword="null"/> when no cut is armed.</summary>
    public long? CutPoint
    {
        get
        {
            lock (_gate)
            {
                return _cutAfter == Never ? null : _cutAfter;
            }
        }
    }

    /// <summary>Whether the device is in permanent failure now (every request fails).</summary>
    public bool IsFailed
    {
        get
        {
            lock (_gate)
            {
                return _writesIssued >= _failAfter;
            }
        }
    }

    /// <summary>Makes the next <paramref name="count"/> writes that would otherwise be forwarded fail without being written.</summary>
    /// <param name="count">How many writes to fail; adds to any still pending.</param>
    public void FailNextWrites(int count)
    {
        ArgumentOutOfRangeException.ThrowIfNegative(count);
        lock (_gate)
        {
            _failNextWrites += count;
        }
    }

    /// <summary>Makes the next <paramref name="count"/> reads fail.</summary>
    /// <param name="count">How many reads to fail; adds to any still pending.</param>
    public void FailNextReads(int count)
    {
        ArgumentOutOfRangeException.ThrowIfNegative(count);
        lock (_gate)
        {
            _failNextReads += count;
        }
    }

    /// <summary>Sets the seeded probabilities of transient write and read faults.</summary>
    /// <param name="writeFailureProbability">Probability in [0, 1] that a write fails.</param>
    /// <param name="readFailureProbability">Probability in [0, 1] that a read fails.</param>
    public void SetFailureProbabilities(double writeFailureProbability, double readFailureProbability)
    {
        FaultInjectingDeviceOptions.ValidateProbability(writeFailureProbability, nameof(writeFailureProbability));
        FaultInjectingDeviceOptions.ValidateProbability(readFailureProbability, nameof(readFailureProbability));
        lock (_gate)
        {
            _writeFailureProbability = writeFailureProbability;
            _readFailureProbability = readFailureProbability;
        }
    }

    /// <summary>Fails every request from now on, until <see cref="ClearFaults"/>.</summary>
    public void FailPermanently()
    {
        lock (_gate)
        {
            _failAfter = _writesIssued;
        }
    }

    /// <summary>
    /// Fails every write with an ordinal above <paramref name="writeCount"/>, and every request once such a write has
    /// been issued, until <see cref="ClearFaults"/>.
    /// </summary>
    /// <param name="writeCount">The ordinal of the last write that may still succeed; not below <see cref="WritesIssued"/>.</param>
    public void FailPermanentlyAfter(long writeCount)
    {
        lock (_gate)
        {
            ThrowIfInPast(writeCount);
            _failAfter = writeCount;
        }
    }

    /// <summary>Disarms permanent failure, pending transient faults and the fault probabilities. A crash cut stays.</summary>
    public void ClearFaults()
    {
        lock (_gate)
        {
            _failAfter = Never;
            _failNextWrites = 0;
            _failNextReads = 0;
            _writeFailureProbability = 0;
            _readFailureProbability = 0;
        }
    }

    /// <summary>
    /// Arms the crash cut: writes with an ordinal above <paramref name="writeCount"/> are acknowledged as successful
    /// but never reach the inner device.
    /// </summary>
    /// <param name="writeCount">The ordinal of the last write that is still forwarded; not below <see cref="WritesIssued"/>.</param>
    public void CutAfter(long writeCount)
    {
        lock (_gate)
        {
            ThrowIfInPast(writeCount);
            _cutAfter = writeCount;
        }
    }

    /// <summary>Arms the crash cut at the current point: every write from now on is acknowledged and lost.</summary>
    public void CutNow()
    {
        lock (_gate)
        {
            _cutAfter = _writesIssued;
        }
    }

    /// <inheritdoc />
    public override void WriteAsync(IntPtr sourceAddress, int segmentId, ulong destinationAddress, uint numBytesToWrite,
        DeviceIOCompletionCallback callback, object? context)
    {
        uint error;
        bool drop = false;
        lock (_gate)
        {
            long ordinal = ++_writesIssued;
            if (IsDisposed)
            {
                error = DeviceErrorCodes.Disposed;
            }
            else if (ordinal > _failAfter)
            {
                error = DeviceErrorCodes.DeviceFailed;
            }
            else if (ordinal > _cutAfter)
            {
                error = DeviceErrorCodes.Success;
                drop = true;
            }
            else if (TransientFaultDue(ref _failNextWrites, _writeFailureProbability))
            {
                error = DeviceErrorCodes.InjectedFault;
            }
            else
            {
                error = DeviceErrorCodes.Success;
            }
        }

        if (drop)
        {
            Interlocked.Increment(ref _writesDropped);
            DeviceCompletion.Invoke(callback, DeviceErrorCodes.Success, numBytesToWrite, context, _logger);
        }
        else if (error != DeviceErrorCodes.Success)
        {
            Interlocked.Increment(ref _writesFailed);
            DeviceCompletion.Invoke(callback, error, 0, context, _logger);
        }
        else
        {
            Interlocked.Increment(ref _writesForwarded);
            Inner.WriteAsync(sourceAddress, segmentId, destinationAddress, numBytesToWrite, callback, context);
        }
    }

    /// <inheritdoc />
    public override void ReadAsync(int segmentId, ulong sourceAddress, IntPtr destinationAddress, uint readLength,
        DeviceIOCompletionCallback callback, object? context)
    {
        uint error;
        lock (_gate)
        {
            if (IsDisposed)
            {
                error = DeviceErrorCodes.Disposed;
            }
            else if (_writesIssued >= _failAfter)
            {
                error = DeviceErrorCodes.DeviceFailed;
            }
            else if (TransientFaultDue(ref _failNextReads, _readFailureProbability))
            {
                error = DeviceErrorCodes.InjectedFault;
            }
            else
            {
                error = DeviceErrorCodes.Success;
            }
        }

        if (error != DeviceErrorCodes.Success)
        {
            Interlocked.Increment(ref _readsFailed);
            DeviceCompletion.Invoke(callback, error, 0, context, _logger);
            return;
        }

        Interlocked.Increment(ref _readsForwarded);
        Inner.ReadAsync(segmentId, sourceAddress, destinationAddress, readLength, callback, context);
    }

    /// <inheritdoc />
    public override void RemoveSegment(int segment)
    {
        if (ShouldForwardRemove())
        {
            Inner.RemoveSegment(segment);
        }
    }

    /// <inheritdoc />
    public override void RemoveSegmentAsync(int segment, AsyncCallback callback, IAsyncResult? result)
    {
        if (ShouldForwardRemove())
        {
            Inner.RemoveSegmentAsync(segment, callback, result);
        }
        else
        {
            DeviceCompletion.Invoke(callback, result, _logger);
        }
    }

    private bool ShouldForwardRemove()
    {
        lock (_gate)
        {
            // A removal has no ordinal of its own: it lies past a point once the write count has reached it.
            if (!IsDisposed && _writesIssued < _failAfter && _writesIssued < _cutAfter)
            {
                return true;
            }
        }

        Interlocked.Increment(ref _removesDropped);
        return false;
    }

    /// <summary>Consumes one armed fault or draws from the seeded generator; call under <see cref="_gate"/>.</summary>
    private bool TransientFaultDue(ref int remaining, double probability)
    {
        if (remaining > 0)
        {
            remaining--;
            return true;
        }

        return probability > 0 && _random.NextDouble() < probability;
    }

    private void ThrowIfInPast(long writeCount)
    {
        if (writeCount < _writesIssued)
        {
            throw new ArgumentOutOfRangeException(nameof(writeCount), writeCount,
                $"{_writesIssued} writes were already issued; the point must not lie in the past.");
        }
    }
}
