using FASTER.core;
using Microsoft.Extensions.Logging;
using Microsoft.Extensions.Logging.Abstractions;

namespace Dse.Storage;

/// <summary>
/// Exclusive ownership of a device's storage (or of a directory of local files), held until disposed: a lock file for
/// local files, a lease on every page blob for <see cref="AzurePageBlobDevice"/>, nothing for devices without shared
/// storage (in-memory).
/// </summary>
/// <remarks>
/// <para>Local files: the lock file <c>.{name}.lock</c> next to the device's files (a name the device's own segment
/// scan does not match) is opened with <see cref="FileShare.None"/>, which .NET implements with
/// <c>flock(LOCK_EX | LOCK_NB)</c> on Unix and a share mode on Windows. A second fence on the same path, in this process
/// or another, is refused at once; the kernel releases the lock when the process dies, even by <c>kill -9</c>. The lock
/// file is never deleted (deleting it could let two openers lock two different files). A directory's lock file is
/// <c>.owner.lock</c> inside it (<see cref="AcquireDirectory"/>).</para>
/// <para>Page blobs: <see cref="AzurePageBlobDevice.AcquireLeaseAsync"/> breaks any earlier owner's lease and takes its
/// own (an owner that crashed never blocks a restart), and the device conditions every later write on it, so the earlier
/// owner, if still running, is fenced: its writes fail with <see cref="DeviceErrorCodes.Fenced"/> and
/// <see cref="IsLost"/> becomes true.</para>
/// </remarks>
public sealed class StorageFence : IAsyncDisposable, IDisposable
{
    // Win32 sharing and lock violations; EWOULDBLOCK from flock on Linux and on BSD/macOS.
    private const int ErrorSharingViolation = 32;
    private const int ErrorLockViolation = 33;
    private const int LinuxEWouldBlock = 11;
    private const int BsdEWouldBlock = 35;

    private readonly AzurePageBlobDevice? _blobs;
    private FileStream? _lockFile;
    private int _released;

    private StorageFence(string description, FileStream? lockFile, AzurePageBlobDevice? blobs)
    {
        Description = description;
        _lockFile = lockFile;
        _blobs = blobs;
    }

    /// <summary>What is held, for messages: the lock file's path, the blobs' names, or that nothing needs holding.</summary>
    public string Description { get; }

    /// <summary>Whether the fence guards shared storage at all (false for in-memory and other devices without it).</summary>
    public bool IsExclusive => _lockFile is not null || _blobs is not null;

    /// <summary>
    /// Whether the process's death releases the fence (a lock file), as opposed to a lease, which stays until the next
    /// owner breaks it.
    /// </summary>
    public bool ReleasedByProcessExit => _lockFile is not null;

    /// <summary>
    /// Whether <see cref="IsLost"/> can ever become true: a lease on page blobs can be broken by the next owner; a lock
    /// file and a fence that holds nothing cannot. Hot paths check only the fences that can.
    /// </summary>
    public bool CanBeLost => _blobs is not null;

    /// <summary>Whether another instance took the storage over since: this instance's writes are refused.</summary>
    public bool IsLost => _blobs is { IsFenced: true } && Volatile.Read(ref _released) == 0;

    /// <summary>
    /// Takes exclusive ownership of the storage under <paramref name="device"/> (looking through
    /// <see cref="DelegatingDevice"/> wrappers): FASTER's local file devices and <see cref="AzurePageBlobDevice"/>;
    /// other devices need none and get a fence that holds nothing.
    /// </summary>
    /// <param name="device">The device whose storage to own.</param>
    /// <param name="logger">Logs the takeover; <see langword="null"/> for none.</param>
    /// <param name="cancellationToken">Cancels taking a lease.</param>
    /// <exception cref="StorageFencedException">Local files: another instance (in this process or another) holds the lock.</exception>
    public static async ValueTask<StorageFence> AcquireAsync(IDevice device, ILogger? logger = null, CancellationToken cancellationToken = default)
    {
        ArgumentNullException.ThrowIfNull(device);
        logger ??= NullLogger.Instance;
        var inner = Unwrap(device);
        switch (inner)
        {
            case ManagedLocalStorageDevice or LocalStorageDevice:
                return AcquireLockFile(inner.FileName, LockFilePath(inner.FileName), logger);
            case AzurePageBlobDevice blobs:
                await blobs.AcquireLeaseAsync(cancellationToken).ConfigureAwait(false);
                var fence = new StorageFence($"page blobs '{blobs.FileName}.*' (leased)", null, blobs);
                StorageLogMessages.FenceAcquired(logger, fence.Description);
                return fence;
            default:
                return Unshared(inner);
        }
    }

    /// <summary>
    /// Takes exclusive ownership of the storage under <paramref name="device"/> without waiting, for owners that open
    /// in a constructor: as <see cref="AcquireAsync"/> for local files and devices without shared storage.
    /// </summary>
    /// <param name="device">The device whose storage to own.</param>
    /// <param name="logger">Logs the lock; <see langword="null"/> for none.</param>
    /// <exception cref="StorageFencedException">Another instance (in this process or another) holds the lock.</exception>
    /// <exception cref="NotSupportedException">
    /// The device is an <see cref="AzurePageBlobDevice"/>: its lease can only be taken asynchronously (<see cref="AcquireAsync"/>).
    /// </exception>
    public static StorageFence Acquire(IDevice device, ILogger? logger = null)
    {
        ArgumentNullException.ThrowIfNull(device);
        var inner = Unwrap(device);
        return inner switch
        {
            ManagedLocalStorageDevice or LocalStorageDevice => AcquireLockFile(inner.FileName, LockFilePath(inner.FileName), logger ?? NullLogger.Instance),
            AzurePageBlobDevice => throw new NotSupportedException(
                $"Page blobs '{inner.FileName}.*' are fenced by a lease, which is taken asynchronously: use StorageFence.AcquireAsync."),
            _ => Unshared(inner),
        };
    }

    /// <summary>
    /// Takes exclusive ownership of a directory of local files: the lock file <see cref="DirectoryLockFilePath"/> inside
    /// it (the directory is created when missing). Refused at once while another instance, in this process or another,
    /// holds it; released on dispose and when the process dies.
    /// </summary>
    /// <param name="directory">The directory whose files to own.</param>
    /// <param name="logger">Logs the lock; <see langword="null"/> for none.</param>
    /// <exception cref="StorageFencedException">Another instance holds the directory's lock file.</exception>
    public static StorageFence AcquireDirectory(string directory, ILogger? logger = null)
    {
        string lockFile = DirectoryLockFilePath(directory);
        return AcquireLockFile(Path.GetDirectoryName(lockFile)!, lockFile, logger ?? NullLogger.Instance, isDirectory: true);
    }

    /// <summary>The lock file that fences the local file device whose files are <c>{path}.{n}</c>.</summary>
    /// <param name="path">The device's path (its file name prefix).</param>
    public static string LockFilePath(string path)
    {
        ArgumentException.ThrowIfNullOrWhiteSpace(path);
        string full = Path.GetFullPath(path);

        // Not "{path}.lock": FASTER's segment scan (RecoverDevice) takes every file starting with the name for a segment.
        return Path.Combine(Path.GetDirectoryName(full) ?? string.Empty, "." + Path.GetFileName(full) + ".lock");
    }

    /// <summary>The lock file that fences the directory of local files <paramref name="directory"/>: <c>.owner.lock</c> inside it.</summary>
    /// <param name="directory">The directory.</param>
    public static string DirectoryLockFilePath(string directory)
    {
        ArgumentException.ThrowIfNullOrWhiteSpace(directory);
        return Path.Combine(Path.GetFullPath(directory), ".owner.lock");
    }

    /// <summary>
    /// Releases the fence without waiting, for owners that release in a constructor's failure path: closes the lock file.
    /// Leases stay until the next owner breaks them, as after a crash; <see cref="DisposeAsync"/> releases them.
    /// </summary>
    public void Dispose()
    {
        if (Interlocked.Exchange(ref _released, 1) == 0)
        {
            Interlocked.Exchange(ref _lockFile, null)?.Dispose();
        }
    }

    /// <summary>Releases the fence: closes the lock file, or releases the leases (best effort; a lease left behind is broken by the next owner).</summary>
    public async ValueTask DisposeAsync()
    {
        if (Interlocked.Exchange(ref _released, 1) != 0)
        {
            return;
        }

        var lockFile = Interlocked.Exchange(ref _lockFile, null);
        if (lockFile is not null)
        {
            await lockFile.DisposeAsync().ConfigureAwait(false);
        }

        if (_blobs is not null)
        {
            await _blobs.ReleaseLeaseAsync().ConfigureAwait(false);
        }
    }

    /// <summary>The exception for an instance whose fence was lost, naming what was taken over.</summary>
    /// <param name="owner">Who was fenced, for the message (for example "DARQ 'orders'").</param>
    public StorageFencedException LostException(string owner) => new(LostMessage(owner));

    /// <summary>The exception for an instance whose fence was lost, naming what was taken over, with the failure that showed it.</summary>
    /// <param name="owner">Who was fenced, for the message (for example "DARQ 'orders'").</param>
    /// <param name="innerException">The refused write.</param>
    public StorageFencedException LostException(string owner, Exception innerException) => new(LostMessage(owner), innerException);

    private string LostMessage(string owner) =>
        $"{owner} was fenced: another instance opened its storage ({Description}) and took it over. This instance can no " +
        "longer write (its appends and commits are refused, and nothing it writes from now on is kept); dispose it.";

    private static IDevice Unwrap(IDevice device)
    {
        while (device is DelegatingDevice wrapper)
        {
            device = wrapper.Inner;
        }

        return device;
    }

    private static StorageFence Unshared(IDevice device)
        => new($"device '{device.FileName}' ({device.GetType().Name}, not shared between instances)", null, null);

    /// <summary>Opens <paramref name="path"/> locked; <paramref name="storage"/> is the device path or directory it guards.</summary>
    private static StorageFence AcquireLockFile(string storage, string path, ILogger logger, bool isDirectory = false)
    {
        string? directory = Path.GetDirectoryName(path);
        if (!string.IsNullOrEmpty(directory))
        {
            Directory.CreateDirectory(directory);
        }

        FileStream stream;
        try
        {
            stream = new FileStream(path, new FileStreamOptions
            {
                Mode = FileMode.OpenOrCreate,
                Access = FileAccess.ReadWrite,
                Share = FileShare.None,
                BufferSize = 0,
            });
        }
        catch (IOException ex) when (IsLockConflict(ex))
        {
            throw new StorageFencedException(
                $"The storage at '{storage}' is owned by another instance: its lock file '{path}' is held (another instance in this " +
                "or another process has this storage open). Dispose that instance, or wait for its process to exit, before opening it.",
                ex);
        }

        string what = isDirectory ? $"directory '{storage}'" : $"local files '{storage}.*'";
        var fence = new StorageFence($"{what} (lock file '{path}')", stream, null);
        if (FileLockingDisabled())
        {
            StorageLogMessages.FileLockingDisabled(logger, fence.Description);
        }
        else
        {
            StorageLogMessages.FenceAcquired(logger, fence.Description);
        }

        return fence;
    }

    /// <summary>Whether opening a file with <see cref="FileShare.None"/> failed because another open file holds its lock (also used by the coordinator's file log).</summary>
    internal static bool IsLockConflict(IOException exception)
    {
        if (OperatingSystem.IsWindows())
        {
            return (exception.HResult & 0xFFFF) is ErrorSharingViolation or ErrorLockViolation;
        }

        return exception.HResult == (OperatingSystem.IsLinux() ? LinuxEWouldBlock : BsdEWouldBlock);
    }

    /// <summary>Whether this process asked .NET not to take file locks, which silently disables the lock (also used by the coordinator's file log).</summary>
    internal static bool FileLockingDisabled()
    {
        if (OperatingSystem.IsWindows())
        {
            return false;
        }

        if (AppContext.TryGetSwitch("System.IO.DisableFileLocking", out bool disabled))
        {
            return disabled;
        }

        string? variable = Environment.GetEnvironmentVariable("DOTNET_SYSTEM_IO_DISABLEFILELOCKING");
        return variable is not null && (variable == "1" || variable.Equals("true", StringComparison.OrdinalIgnoreCase));
    }
}
