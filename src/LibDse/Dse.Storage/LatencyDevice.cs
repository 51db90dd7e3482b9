using System.Collections.Concurrent;
using FASTER.core;
using Microsoft.Extensions.Logging;
using Microsoft.Extensions.Logging.Abstractions;

namespace Dse.Storage;

/// <summary>
/// Wraps a device and delays each write (and each asynchronous segment removal) by a configurable latency,
/// optionally with seeded jitter, before forwarding it; reads are forwarded at once unless a read latency is set.
/// </summary>
/// <remarks>
/// The delay runs on a timer of the configured <see cref="TimeProvider"/>; no thread blocks. A delayed write reaches
/// the inner device only when its timer fires, so until then it is neither visible there nor acknowledged, as with a
/// slow remote store. The synchronous <see cref="DelegatingDevice.RemoveSegment(int)"/> cannot be delayed without blocking a thread and is
/// forwarded at once. Disposing the device completes operations still waiting with <see cref="DeviceErrorCodes.Disposed"/>.
/// </remarks>
public sealed class LatencyDevice : DelegatingDevice
{
    private static readonly TimerCallback FireCallback = static state => ((DelayedOperation)state!).Owner.Fire((DelayedOperation)state);

    private readonly TimeSpan _writeLatency;
    private readonly TimeSpan _readLatency;
    private readonly TimeSpan _jitter;
    private readonly TimeProvider _timeProvider;
    private readonly ILogger _logger;

    /// <summary>Jitter source; guarded by locking it, so the sequence of delays is reproducible for a given issue order.</summary>
    private readonly Random _random;

    /// <summary>Operations whose timer has not fired yet; an operation leaves it exactly once (fired or cancelled by disposal).</summary>
    private readonly ConcurrentDictionary<DelayedOperation, byte> _pending = new();

    /// <summary>Wraps <paramref name="inner"/> with the given latencies.</summary>
    /// <param name="inner">The device to forward to.</param>
    /// <param name="options">Latencies and clock; <see langword="null"/> for no delay at all.</param>
    /// <param name="ownsInner">Whether disposing this device disposes <paramref name="inner"/>. Default <see langword="true"/>.</param>
    /// <param name="logger">Receives errors thrown by completion callbacks; <see langword="null"/> for none.</param>
    public LatencyDevice(IDevice inner, LatencyDeviceOptions? options = null, bool ownsInner = true, ILogger? logger = null)
        : base(inner, ownsInner)
    {
        options ??= new LatencyDeviceOptions();
        options.Validate();
        _writeLatency = options.WriteLatency;
        _readLatency = options.ReadLatency;
        _jitter = options.Jitter;
        _timeProvider = options.TimeProvider;
        _random = new Random(options.Seed);
        _logger = logger ?? NullLogger.Instance;
    }

    /// <summary>The number of operations waiting for their delay to elapse.</summary>
    public int PendingOperations => _pending.Count;

    /// <inheritdoc />
    public override void WriteAsync(IntPtr sourceAddress, int segmentId, ulong destinationAddress, uint numBytesToWrite,
        DeviceIOCompletionCallback callback, object? context)
    {
        var delay = NextDelay(_writeLatency);
        if (delay <= TimeSpan.Zero && !IsDisposed)
        {
            Inner.WriteAsync(sourceAddress, segmentId, destinationAddress, numBytesToWrite, callback, context);
            return;
        }

        Schedule(new DelayedOperation(this, OperationKind.Write, segmentId, destinationAddress, sourceAddress, numBytesToWrite, callback, context), delay);
    }

    /// <inheritdoc />
    public override void ReadAsync(int segmentId, ulong sourceAddress, IntPtr destinationAddress, uint readLength,
        DeviceIOCompletionCallback callback, object? context)
    {
        var delay = NextDelay(_readLatency);
        if (delay <= TimeSpan.Zero && !IsDisposed)
        {
            Inner.ReadAsync(segmentId, sourceAddress, destinationAddress, readLength, callback, context);
            return;
        }

        Schedule(new DelayedOperation(this, OperationKind.Read, segmentId, sourceAddress, destinationAddress, readLength, callback, context), delay);
    }

    /// <inheritdoc />
    public override void RemoveSegmentAsync(int segment, AsyncCallback callback, IAsyncResult? result)
    {
        var delay = NextDelay(_writeLatency);
        if (delay <= TimeSpan.Zero && !IsDisposed)
        {
            Inner.RemoveSegmentAsync(segment, callback, result);
            return;
        }

        Schedule(new DelayedOperation(this, segment, callback, result), delay);
    }

    /// <inheritdoc />
    protected override void DisposeCore()
    {
        foreach (var operation in _pending.Keys)
        {
            if (operation.TryClaim())
            {
                _pending.TryRemove(operation, out _);
                operation.DisposeTimer();
                CompleteDisposed(operation);
            }
        }
    }

    private TimeSpan NextDelay(TimeSpan latency)
    {
        if (latency <= TimeSpan.Zero || _jitter <= TimeSpan.Zero)
        {
            return latency;
        }

        double fraction;
        lock (_random)
        {
            fraction = _random.NextDouble();
        }

        return latency + TimeSpan.FromTicks((long)(_jitter.Ticks * fraction));
    }

    private void Schedule(DelayedOperation operation, TimeSpan delay)
    {
        _pending.TryAdd(operation, 0);

        // Disposal may have swept the pending set just before the add above; whoever claims the operation completes it.
        if (IsDisposed)
        {
            if (operation.TryClaim())
            {
                _pending.TryRemove(operation, out _);
                CompleteDisposed(operation);
            }

            return;
        }

        operation.Arm(_timeProvider.CreateTimer(FireCallback, operation, delay, Timeout.InfiniteTimeSpan));
    }

    private void Fire(DelayedOperation operation)
    {
        if (!operation.TryClaim())
        {
            return;
        }

        _pending.TryRemove(operation, out _);
        operation.DisposeTimer();
        if (IsDisposed)
        {
            CompleteDisposed(operation);
            return;
        }

        switch (operation.Kind)
        {
            case OperationKind.Write:
                Inner.WriteAsync(operation.Buffer, operation.Segment, operation.Offset, operation.Length, operation.Callback!, operation.Context);
                break;
            case OperationKind.Read:
                Inner.ReadAsync(operation.Segment, operation.Offset, operation.Buffer, operation.Length, operation.Callback!, operation.Context);
                break;
            default:
                Inner.RemoveSegmentAsync(operation.Segment, operation.RemoveCallback!, operation.RemoveResult);
                break;
        }
    }

    private void CompleteDisposed(DelayedOperation operation)
    {
        if (operation.Kind == OperationKind.Remove)
        {
            DeviceCompletion.Invoke(operation.RemoveCallback!, operation.RemoveResult, _logger);
        }
        else
        {
            DeviceCompletion.Invoke(operation.Callback!, DeviceErrorCodes.Disposed, 0, operation.Context, _logger);
        }
    }

    private enum OperationKind
    {
        Write,
        Read,
        Remove,
    }

    /// <summary>One delayed request; the timer state. It is completed by exactly one claimant (timer or disposal).</summary>
    private sealed class DelayedOperation
    {
        private ITimer? _timer;
        private int _claimed;

        public DelayedOperation(LatencyDevice owner, OperationKind kind, int segment, ulong offset, IntPtr buffer, uint length,
            DeviceIOCompletionCallback callback, object? context)
        {
            Owner = owner;
            Kind = kind;
            Segment = segment;
            Offset = offset;
            Buffer = buffer;
            Length = length;
            Callback = callback;
            Context = context;
        }

        public DelayedOperation(LatencyDevice owner, int segment, AsyncCallback callback, IAsyncResult? result)
        {
            Owner = owner;
            Kind = OperationKind.Remove;
            Segment = segment;
            RemoveCallback = callback;
            RemoveResult = result;
        }

        public LatencyDevice Owner { get; }

        public OperationKind Kind { get; }

        public int Segment { get; }

        public ulong Offset { get; }

        public IntPtr Buffer { get; }

        public uint Length { get; }

        public DeviceIOCompletionCallback? Callback { get; }

        public object? Context { get; }

        public AsyncCallback? RemoveCallback { get; }

        public IAsyncResult? RemoveResult { get; }

        public bool TryClaim() => Interlocked.Exchange(ref _claimed, 1) == 0;

        /// <summary>Keeps the timer reachable (an unreferenced timer may be collected before it fires) until it is disposed.</summary>
        public void Arm(ITimer timer)
        {
            Volatile.Write(ref _timer, timer);

            // The timer may already have fired (or disposal claimed us) before it was stored; then release it here.
            if (Volatile.Read(ref _claimed) != 0)
            {
                timer.Dispose();
            }
        }

        public void DisposeTimer() => Volatile.Read(ref _timer)?.Dispose();
    }
}
