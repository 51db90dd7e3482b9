using System.Runtime.InteropServices;

namespace Dse.Samples.Shared;

/// <summary>
/// A launcher's run, stopped by Ctrl+C or SIGTERM: either cancels <see cref="Token"/>, so that the run disposes its
/// clusters (killing every child process) and deletes its temp folder instead of the runtime exiting at once.
/// </summary>
internal sealed class Interruption : IDisposable
{
    /// <summary>The exit code of a run stopped by Ctrl+C or SIGTERM (128 + SIGINT).</summary>
    public const int InterruptedExitCode = 130;

    /// <summary>The exit code of a run a process of the cluster failed.</summary>
    public const int FailedExitCode = 1;

    private readonly CancellationTokenSource _cancellation = new();
    private readonly PosixSignalRegistration _sigterm;

    /// <summary>Starts listening for Ctrl+C and SIGTERM.</summary>
    public Interruption()
    {
        Console.CancelKeyPress += OnCancelKeyPress;
        _sigterm = PosixSignalRegistration.Create(PosixSignal.SIGTERM, context =>
        {
            context.Cancel = true;
            _cancellation.Cancel();
        });
    }

    /// <summary>Cancelled by Ctrl+C or SIGTERM.</summary>
    public CancellationToken Token => _cancellation.Token;

    /// <summary>
    /// Runs <paramref name="run"/> with <see cref="Token"/>; returns its result and exit code 0, or, saying why on
    /// <paramref name="error"/>, no result and <see cref="InterruptedExitCode"/> when it was interrupted or
    /// <see cref="FailedExitCode"/> when it failed with an <see cref="InvalidOperationException"/> (a process of the cluster failed).
    /// </summary>
    public async Task<(T? Result, int ExitCode)> RunAsync<T>(Func<CancellationToken, Task<T>> run, TextWriter error)
        where T : class
    {
        ArgumentNullException.ThrowIfNull(run);
        ArgumentNullException.ThrowIfNull(error);
        try
        {
            return (await run(Token).ConfigureAwait(false), 0);
        }
        catch (Exception) when (Token.IsCancellationRequested)
        {
            // Cancellation surfaces as OperationCanceledException, or as a call that failed CANCELLED.
            await error.WriteLineAsync("cancelled; the cluster's processes were stopped.").ConfigureAwait(false);
            return (null, InterruptedExitCode);
        }
        catch (InvalidOperationException ex)
        {
            await error.WriteLineAsync($"error: {ex.Message}").ConfigureAwait(false);
            return (null, FailedExitCode);
        }
    }

    /// <inheritdoc />
    public void Dispose()
    {
        Console.CancelKeyPress -= OnCancelKeyPress;
        _sigterm.Dispose();
        _cancellation.Dispose();
    }

    private void OnCancelKeyPress(object? sender, ConsoleCancelEventArgs e)
    {
        e.Cancel = true;
        _cancellation.Cancel();
    }
}
