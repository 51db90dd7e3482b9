using Grpc.Core;

namespace Dse.Workflows;

/// <summary>How a step is attempted: retries with exponential backoff, and a timeout per attempt, on the engine's <see cref="TimeProvider"/>.</summary>
public sealed class StepOptions
{
    /// <summary>Attempts in all, the first included. Default 3.</summary>
    public int MaxAttempts { get; set; } = 3;

    /// <summary>The wait before the second attempt. Default 100 ms.</summary>
    public TimeSpan InitialBackoff { get; set; } = TimeSpan.FromMilliseconds(100);

    /// <summary>Each further wait is the previous one times this. Default 2.</summary>
    public double BackoffCoefficient { get; set; } = 2;

    /// <summary>No wait between attempts is longer. Default 10 s.</summary>
    public TimeSpan MaxBackoff { get; set; } = TimeSpan.FromSeconds(10);

    /// <summary>An attempt still running after this is cancelled and counts as failed. Default 30 s; <see cref="Timeout.InfiniteTimeSpan"/> for none.</summary>
    public TimeSpan AttemptTimeout { get; set; } = TimeSpan.FromSeconds(30);

    /// <summary>
    /// Whether an attempt's exception is worth another attempt. Default (<c>null</c>): <see cref="IsRetryableByDefault"/>.
    /// </summary>
    public Func<Exception, bool>? IsRetryable { get; set; }

    /// <summary>
    /// The default rule: an <see cref="RpcException"/> is retried only for a status that says "try again" (Unavailable,
    /// DeadlineExceeded, Aborted, ResourceExhausted, Internal, Unknown, Cancelled by a timeout); an
    /// <see cref="ArgumentException"/> or <see cref="StepRefusedException"/> never; anything else is.
    /// </summary>
    public static bool IsRetryableByDefault(Exception exception) => exception switch
    {
        StepRefusedException => false,
        ArgumentException => false,
        RpcException rpc => rpc.StatusCode is StatusCode.Unavailable or StatusCode.DeadlineExceeded or StatusCode.Aborted
            or StatusCode.ResourceExhausted or StatusCode.Internal or StatusCode.Unknown or StatusCode.Cancelled,
        _ => true,
    };

    /// <summary>The wait before attempt <paramref name="attempt"/> (2 or more).</summary>
    internal TimeSpan BackoffBefore(int attempt)
    {
        double factor = Math.Pow(BackoffCoefficient, attempt - 2);
        double ticks = Math.Min(InitialBackoff.Ticks * factor, MaxBackoff.Ticks);
        return TimeSpan.FromTicks((long)ticks);
    }

    /// <summary>Throws if an option is out of range; the message names it.</summary>
    internal void Validate()
    {
        ArgumentOutOfRangeException.ThrowIfNegativeOrZero(MaxAttempts, nameof(MaxAttempts));
        ArgumentOutOfRangeException.ThrowIfLessThan(InitialBackoff, TimeSpan.Zero, nameof(InitialBackoff));
        ArgumentOutOfRangeException.ThrowIfLessThan(BackoffCoefficient, 1, nameof(BackoffCoefficient));
        ArgumentOutOfRangeException.ThrowIfLessThan(MaxBackoff, TimeSpan.Zero, nameof(MaxBackoff));
        if (AttemptTimeout != Timeout.InfiniteTimeSpan)
        {
            ArgumentOutOfRangeException.ThrowIfLessThanOrEqual(AttemptTimeout, TimeSpan.Zero, nameof(AttemptTimeout));
        }
    }
}
