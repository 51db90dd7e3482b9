using System.Runtime.InteropServices;

namespace Dse.Storage.Tests.Infrastructure;

/// <summary>Page-aligned native memory for handing to devices (direct I/O needs aligned buffers).</summary>
public sealed unsafe class NativeBuffer : IDisposable
{
    private void* _pointer;

    public NativeBuffer(int length)
    {
        _pointer = NativeMemory.AlignedAlloc((nuint)Math.Max(length, 1), 4096);
        NativeMemory.Clear(_pointer, (nuint)Math.Max(length, 1));
        Length = length;
    }

    public int Length { get; }

    public IntPtr Pointer => (IntPtr)_pointer;

    public Span<byte> Span => new(_pointer, Length);

    public static NativeBuffer From(ReadOnlySpan<byte> data)
    {
        var buffer = new NativeBuffer(data.Length);
        data.CopyTo(buffer.Span);
        return buffer;
    }

    public void Dispose()
    {
        if (_pointer != null)
        {
            NativeMemory.AlignedFree(_pointer);
            _pointer = null;
        }
    }
}
