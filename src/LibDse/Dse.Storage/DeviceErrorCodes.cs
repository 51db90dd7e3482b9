namespace Dse.Storage;

/// <summary>
/// Error codes that the devices in this assembly pass to FASTER's completion callback.
/// FASTER treats any nonzero code as a failure; the values follow Win32 where one fits and use the
/// customer-defined range (bit 29 set) otherwise, so they never collide with operating-system codes.
/// </summary>
public static class DeviceErrorCodes
{
    /// <summary>The operation succeeded.</summary>
    public const uint Success = 0;

    /// <summary>The segment does not exist (never written, or removed). Win32 <c>ERROR_FILE_NOT_FOUND</c>.</summary>
    public const uint NotFound = 2;

    /// <summary>The address or length is not sector-aligned, or the range leaves the segment. Win32 <c>ERROR_INVALID_PARAMETER</c>.</summary>
    public const uint InvalidArgument = 87;

    /// <summary>The backing store failed the request. Win32 <c>ERROR_IO_DEVICE</c>.</summary>
    public const uint IoError = 1117;

    /// <summary>The device was disposed before or while the operation ran.</summary>
    public const uint Disposed = 0x2000_0001;

    /// <summary>A <see cref="FaultInjectingDevice"/> failed the operation on purpose (transient fault).</summary>
    public const uint InjectedFault = 0x2000_0002;

    /// <summary>A <see cref="FaultInjectingDevice"/> is in permanent failure mode.</summary>
    public const uint DeviceFailed = 0x2000_0003;

    /// <summary>
    /// The device lost its exclusive hold on the storage (another instance broke its lease and took over, see
    /// <see cref="StorageFence"/>); it fails every later write.
    /// </summary>
    public const uint Fenced = 0x2000_0004;

    /// <summary>Returns a short human-readable name for an error code, for messages and logs.</summary>
    /// <param name="errorCode">The code passed to a completion callback.</param>
    public static string Describe(uint errorCode) => errorCode switch
    {
        Success => "success",
        NotFound => "segment not found",
        InvalidArgument => "misaligned or out-of-range request",
        IoError => "backing store I/O error",
        Disposed => "device disposed",
        InjectedFault => "injected transient fault",
        DeviceFailed => "injected permanent device failure",
        Fenced => "fenced: another instance took over the storage",
        _ => $"device error {errorCode}",
    };
}
