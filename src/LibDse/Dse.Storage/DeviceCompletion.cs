using FASTER.core;
using Microsoft.Extensions.Logging;

namespace Dse.Storage;

/// <summary>Invokes FASTER completion callbacks so that an exception in one never escapes onto an I/O thread.</summary>
internal static class DeviceCompletion
{
    /// <summary>Runs the callback on the current thread, containing and logging any exception it throws.</summary>
    public static void Invoke(DeviceIOCompletionCallback callback, uint errorCode, uint numBytes, object? context, ILogger logger)
    {
        try
        {
            callback(errorCode, numBytes, context);
        }
        catch (Exception ex)
        {
            StorageLogMessages.CompletionCallbackThrew(logger, ex);
        }
    }

    /// <summary>Runs the callback on the thread pool, as a device with real asynchronous I/O would.</summary>
    public static void Post(DeviceIOCompletionCallback callback, uint errorCode, uint numBytes, object? context, ILogger logger)
    {
        ThreadPool.UnsafeQueueUserWorkItem(
            static state => state.Run(),
            new PendingCompletion(callback, errorCode, numBytes, context, logger),
            preferLocal: false);
    }

    /// <summary>Runs an <see cref="AsyncCallback"/> (segment removal), containing and logging any exception it throws.</summary>
    public static void Invoke(AsyncCallback callback, IAsyncResult? result, ILogger logger)
    {
        try
        {
            // FASTER itself passes null results through its AsyncCallback-based removal API.
            callback(result!);
        }
        catch (Exception ex)
        {
            StorageLogMessages.CompletionCallbackThrew(logger, ex);
        }
    }

    private sealed class PendingCompletion(
        DeviceIOCompletionCallback callback, uint errorCode, uint numBytes, object? context, ILogger logger)
    {
        public void Run() => Invoke(callback, errorCode, numBytes, context, logger);
    }
}
