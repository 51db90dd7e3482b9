using FASTER.core;

namespace Dse.Storage;

/// <summary>Task-based reads and writes on an <see cref="IDevice"/>, split at segment boundaries.</summary>
internal static class DeviceIo
{
    private static readonly DeviceIOCompletionCallback Completed =
        static (errorCode, numBytes, context) => ((TaskCompletionSource<IoResult>)context).TrySetResult(new IoResult(errorCode, numBytes));

    /// <summary>
    /// Writes <paramref name="length"/> bytes at <paramref name="address"/>, one request per segment touched, issuing
    /// the request that holds the first byte last and only after the others were acknowledged. A crash part-way thus
    /// never leaves the first sector (a record header) on the device without the rest.
    /// </summary>
    /// <exception cref="IOException">The device reported an error.</exception>
    public static async Task WriteFirstPartLastAsync(IDevice device, long address, IntPtr source, int length)
    {
        var parts = Split(device, address, length);
        for (int i = parts.Count - 1; i >= 0; i--)
        {
            var (partAddress, partOffset, partLength) = parts[i];
            var result = await WriteOnceAsync(device, partAddress, source + partOffset, partLength).ConfigureAwait(false);
            if (result.ErrorCode != DeviceErrorCodes.Success)
            {
                throw new IOException(
                    $"Device '{device.FileName}' failed to write {partLength} bytes at address {partAddress}: " +
                    $"error {result.ErrorCode} ({DeviceErrorCodes.Describe(result.ErrorCode)}).");
            }
        }
    }

    /// <summary>
    /// Reads up to <paramref name="length"/> bytes at <paramref name="address"/> and returns how many contiguous bytes
    /// from the start were read: a missing segment or a short read ends the range.
    /// </summary>
    /// <exception cref="IOException">The device reported an error other than <see cref="DeviceErrorCodes.NotFound"/>.</exception>
    public static async Task<int> ReadAsync(IDevice device, long address, IntPtr destination, int length)
    {
        int total = 0;
        foreach (var (partAddress, partOffset, partLength) in Split(device, address, length))
        {
            var result = await ReadOnceAsync(device, partAddress, destination + partOffset, partLength).ConfigureAwait(false);
            if (result.ErrorCode == DeviceErrorCodes.NotFound)
            {
                break;
            }

            if (result.ErrorCode != DeviceErrorCodes.Success)
            {
                throw new IOException(
                    $"Device '{device.FileName}' failed to read {partLength} bytes at address {partAddress}: " +
                    $"error {result.ErrorCode} ({DeviceErrorCodes.Describe(result.ErrorCode)}).");
            }

            total += (int)Math.Min(result.BytesTransferred, (uint)partLength);
            if (result.BytesTransferred < partLength)
            {
                break;
            }
        }

        return total;
    }

    /// <summary>Issues one write as is and completes with the device's answer.</summary>
    public static Task<IoResult> WriteOnceAsync(IDevice device, long address, IntPtr source, int length)
    {
        var completion = new TaskCompletionSource<IoResult>(TaskCreationOptions.RunContinuationsAsynchronously);
        device.WriteAsync(source, (ulong)address, (uint)length, Completed, completion);
        return completion.Task;
    }

    /// <summary>Issues one read as is and completes with the device's answer.</summary>
    public static Task<IoResult> ReadOnceAsync(IDevice device, long address, IntPtr destination, int length)
    {
        var completion = new TaskCompletionSource<IoResult>(TaskCreationOptions.RunContinuationsAsynchronously);
        device.ReadAsync((ulong)address, destination, (uint)length, Completed, completion);
        return completion.Task;
    }

    /// <summary>Splits [address, address + length) at segment boundaries into (address, buffer offset, length) parts.</summary>
    private static List<(long Address, int Offset, int Length)> Split(IDevice device, long address, int length)
    {
        var parts = new List<(long, int, int)>(1);
        long segmentSize = device.SegmentSize;
        int offset = 0;
        while (offset < length)
        {
            long partAddress = address + offset;
            long room = segmentSize > 0 ? segmentSize - (partAddress & (segmentSize - 1)) : long.MaxValue;
            int partLength = (int)Math.Min(length - offset, room);
            parts.Add((partAddress, offset, partLength));
            offset += partLength;
        }

        return parts;
    }

    /// <summary>What a device reported for one request.</summary>
    internal readonly record struct IoResult(uint ErrorCode, uint BytesTransferred);
}
