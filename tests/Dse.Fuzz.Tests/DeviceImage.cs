using Dse.Storage;

namespace Dse.Fuzz.Tests;

/// <summary>The bytes of an <see cref="InMemoryStorage"/> as one flat image over its segments, and back.</summary>
internal static class DeviceImage
{
    /// <summary>Segments 0, 1, ... up to the first missing one, each padded to <paramref name="segmentSize"/> but the last.</summary>
    public static byte[] Read(InMemoryStorage storage, long segmentSize)
    {
        using var image = new MemoryStream();
        for (int segment = 0; storage.TryGetSegmentLength(segment, out long length); segment++)
        {
            if (segment > 0 && image.Length < segment * segmentSize)
            {
                image.SetLength(segment * segmentSize);
                image.Position = image.Length;
            }

            var bytes = new byte[length];
            storage.TryRead(segment, 0, bytes);
            image.Write(bytes);
        }

        return image.ToArray();
    }

    /// <summary>New storage holding <paramref name="image"/> cut into segments (a shorter image has fewer or shorter segments).</summary>
    public static InMemoryStorage Write(byte[] image, long segmentSize)
    {
        var storage = new InMemoryStorage();
        for (long offset = 0; offset < image.Length; offset += segmentSize)
        {
            int length = (int)Math.Min(segmentSize, image.Length - offset);
            storage.Write((int)(offset / segmentSize), 0, image.AsSpan((int)offset, length));
        }

        return storage;
    }

    /// <summary>Whether the two images hold the same bytes in <c>[from, from + length)</c>, bytes past an image's end reading as zero.</summary>
    public static bool SameRange(byte[] a, byte[] b, long from, long length)
    {
        for (long i = from; i < from + length; i++)
        {
            byte x = i < a.Length ? a[i] : (byte)0;
            byte y = i < b.Length ? b[i] : (byte)0;
            if (x != y)
            {
                return false;
            }
        }

        return true;
    }
}
