using System.Runtime.InteropServices;

namespace Dse.Storage;

/// <summary>
/// Zeroed native memory aligned for direct I/O. The owner must keep it alive until every device request that
/// uses it has completed; there is deliberately no finalizer, which could free memory a device still writes into.
/// </summary>
internal sealed unsafe class AlignedBuffer : IDisposable
{
    /// <summary>Alignment of every buffer: a page, enough for O_DIRECT on any common file system.</summary>
    public const int Alignment = 4096;

    private void* _pointer;

    public AlignedBuffer(int length)
    {
        ArgumentOutOfRangeException.ThrowIfNegativeOrZero(length);
        _pointer = NativeMemory.AlignedAlloc((nuint)length, Alignment);
        NativeMemory.Clear(_pointer, (nuint)length);
        Length = length;
    }

    public int Length { get; }

    public IntPtr Pointer
    {
        get
        {
            ObjectDisposedException.ThrowIf(_pointer == null, this);
            return (IntPtr)_pointer;
        }
    }

    public Span<byte> Span => new((void*)Pointer, Length);

    public void Dispose()
    {
        if (_pointer != null)
        {
            NativeMemory.AlignedFree(_pointer);
            _pointer = null;
        }
    }
}
