using Dse.Storage;
using Microsoft.Extensions.Logging;
using Microsoft.Extensions.Logging.Abstractions;

namespace Dse.Darq;

/// <summary>Exclusive ownership of the DARQ's storage (<see cref="DarqOptions.ExclusiveStorage"/>).</summary>
public sealed partial class Darq
{
    /// <summary>The fences on the log and commit devices that hold something, from open to dispose; empty when not exclusive.</summary>
    private StorageFence[] _fences = [];

    /// <summary>The fences of <see cref="_fences"/> that another instance can take over (leases): what every step checks.</summary>
    private StorageFence[] _losableFences = [];

    /// <summary>
    /// Releases what a process's death would release (local lock files) without closing anything else: for in-process
    /// tests that abandon an instance as a crash and open the same storage again. Page blob leases stay, as they would
    /// after a crash (the next instance breaks them).
    /// </summary>
    internal async ValueTask ReleaseFencesAsProcessExitWouldAsync()
    {
        foreach (var fence in _fences)
        {
            if (fence.ReleasedByProcessExit)
            {
                await fence.DisposeAsync().ConfigureAwait(false);
            }
        }
    }

    /// <summary>Takes both devices' fences (the log device's first), or none when the storage need not be exclusive.</summary>
    private static async Task<StorageFence[]> AcquireFencesAsync(DarqOptions options, ILoggerFactory? loggerFactory, CancellationToken cancellationToken)
    {
        if (!options.ExclusiveStorage)
        {
            return [];
        }

        var logger = loggerFactory?.CreateLogger<StorageFence>() ?? (ILogger)NullLogger.Instance;
        StorageFence? logFence = null;
        try
        {
            logFence = await StorageFence.AcquireAsync(options.LogDevice!, logger, cancellationToken).ConfigureAwait(false);
            var commitFence = await StorageFence.AcquireAsync(options.CommitDevice!, logger, cancellationToken).ConfigureAwait(false);

            // Fences that hold nothing (in-memory devices) are left out, so that checking for a lost fence costs nothing there.
            return (logFence.IsExclusive, commitFence.IsExclusive) switch
            {
                (true, true) => [logFence, commitFence],
                (true, false) => [logFence],
                (false, true) => [commitFence],
                _ => [],
            };
        }
        catch (StorageFencedException e)
        {
            if (logFence is not null)
            {
                await logFence.DisposeAsync().ConfigureAwait(false);
            }

            throw new StorageFencedException($"DARQ '{options.Name}' cannot open: {e.Message}", e);
        }
        catch
        {
            if (logFence is not null)
            {
                await logFence.DisposeAsync().ConfigureAwait(false);
            }

            throw;
        }
    }

    private static async ValueTask ReleaseFencesAsync(StorageFence[] fences)
    {
        foreach (var fence in fences)
        {
            await fence.DisposeAsync().ConfigureAwait(false);
        }
    }

    /// <summary>The error for a DARQ whose storage another instance took over, or <see langword="null"/> while it owns it.</summary>
    private StorageFencedException? FencedException()
    {
        foreach (var fence in _losableFences)
        {
            if (fence.IsLost)
            {
                return fence.LostException($"DARQ '{Name}'");
            }
        }

        return null;
    }

    private void ThrowIfFenced()
    {
        if (FencedException() is { } fenced)
        {
            throw fenced;
        }
    }
}
