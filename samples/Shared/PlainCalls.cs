using Grpc.Core;

namespace Dse.Samples.Shared;

/// <summary>
/// The calls a launcher makes without a DSE header to read a cluster's state after its load (their replies come after a
/// barrier, so they show recoverable state only), retried while a restart or rollback gets in their way.
/// </summary>
internal static class PlainCalls
{
    private static readonly TimeSpan s_retryDelay = TimeSpan.FromMilliseconds(200);

    /// <summary>
    /// Makes <paramref name="call"/> (given its deadline), again after ABORTED or UNAVAILABLE until <paramref name="timeout"/>
    /// has passed; any other failure, or the last, is an <see cref="InvalidOperationException"/> saying
    /// <paramref name="what"/> could not be done, with <paramref name="describeCluster"/>'s account of the processes.
    /// </summary>
    public static async Task<T> RetryAsync<T>(string what, Func<string> describeCluster, Func<DateTime, Task<T>> call, TimeSpan timeout, CancellationToken cancellationToken)
    {
        ArgumentNullException.ThrowIfNull(describeCluster);
        ArgumentNullException.ThrowIfNull(call);
        var giveUp = DateTime.UtcNow + timeout;
        while (true)
        {
            try
            {
                return await call(giveUp).ConfigureAwait(false);
            }
            catch (RpcException ex) when (ex.StatusCode is StatusCode.Aborted or StatusCode.Unavailable && DateTime.UtcNow < giveUp && !cancellationToken.IsCancellationRequested)
            {
                await Task.Delay(s_retryDelay, cancellationToken).ConfigureAwait(false);
            }
            catch (RpcException ex) when (!cancellationToken.IsCancellationRequested)
            {
                throw new InvalidOperationException($"Could not {what}: {ex.Status}.{Environment.NewLine}{describeCluster()}", ex);
            }
        }
    }
}
