using FASTER.core;

namespace Dse.Storage.Tests.Infrastructure;

/// <summary>Awaitable single device requests for tests; every wait is bounded so a lost callback fails instead of hanging.</summary>
public static class TestIo
{
    public static readonly TimeSpan Timeout = TimeSpan.FromSeconds(30);

    private static readonly DeviceIOCompletionCallback Completed =
        static (errorCode, numBytes, context) => ((TaskCompletionSource<(uint, uint)>)context).TrySetResult((errorCode, numBytes));

    /// <summary>Starts a write and returns the task of its callback (error code, bytes); the buffer must live until it completes.</summary>
    public static Task<(uint ErrorCode, uint Bytes)> StartWrite(IDevice device, ulong address, NativeBuffer buffer)
    {
        var completion = new TaskCompletionSource<(uint, uint)>(TaskCreationOptions.RunContinuationsAsynchronously);
        device.WriteAsync(buffer.Pointer, address, (uint)buffer.Length, Completed, completion);
        return completion.Task;
    }

    /// <summary>Starts a read into a buffer and returns the task of its callback (error code, bytes).</summary>
    public static Task<(uint ErrorCode, uint Bytes)> StartRead(IDevice device, ulong address, NativeBuffer buffer)
    {
        var completion = new TaskCompletionSource<(uint, uint)>(TaskCreationOptions.RunContinuationsAsynchronously);
        device.ReadAsync(address, buffer.Pointer, (uint)buffer.Length, Completed, completion);
        return completion.Task;
    }

    /// <summary>Writes bytes at an address and returns the callback's error code.</summary>
    public static async Task<uint> WriteAsync(IDevice device, ulong address, byte[] data)
    {
        using var buffer = NativeBuffer.From(data);
        var (errorCode, _) = await StartWrite(device, address, buffer).WaitAsync(Timeout);
        return errorCode;
    }

    /// <summary>Writes bytes at an address and fails the test unless the device reports success.</summary>
    public static async Task WriteOkAsync(IDevice device, ulong address, byte[] data)
    {
        uint errorCode = await WriteAsync(device, address, data);
        Assert.True(errorCode == 0, $"write of {data.Length} bytes at {address} failed: {DeviceErrorCodes.Describe(errorCode)}");
    }

    /// <summary>Reads bytes at an address; returns the error code, the byte count reported and the buffer contents.</summary>
    public static async Task<(uint ErrorCode, uint Bytes, byte[] Data)> ReadAsync(IDevice device, ulong address, int length)
    {
        using var buffer = new NativeBuffer(length);
        var (errorCode, bytes) = await StartRead(device, address, buffer).WaitAsync(Timeout);
        return (errorCode, bytes, buffer.Span.ToArray());
    }

    /// <summary>Reads bytes at an address and fails the test unless the device reports success for the full length.</summary>
    public static async Task<byte[]> ReadOkAsync(IDevice device, ulong address, int length)
    {
        var (errorCode, bytes, data) = await ReadAsync(device, address, length);
        Assert.True(errorCode == 0, $"read of {length} bytes at {address} failed: {DeviceErrorCodes.Describe(errorCode)}");
        Assert.Equal((uint)length, bytes);
        return data;
    }

    /// <summary>Deterministic pseudo-random bytes.</summary>
    public static byte[] Pattern(int length, int seed)
    {
        var data = new byte[length];
        new Random(seed).NextBytes(data);
        return data;
    }

    /// <summary>Waits for a segment removal through the asynchronous API.</summary>
    public static Task RemoveSegmentAsync(IDevice device, int segment)
    {
        var completion = new TaskCompletionSource(TaskCreationOptions.RunContinuationsAsynchronously);
        device.RemoveSegmentAsync(segment, _ => completion.TrySetResult(), null);
        return completion.Task.WaitAsync(Timeout);
    }
}
