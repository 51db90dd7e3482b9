using FASTER.core;

namespace Dse.Storage;

/// <summary>
/// The page geometry of one FasterLog and the rule its record length words follow: a record is a header (the 4-byte
/// length word first) and the entry padded to 4 bytes, and it never crosses a page; a zero word pads the rest of a page.
/// All arithmetic is in <see cref="long"/>, so no word, however damaged, overflows it.
/// </summary>
internal readonly struct FasterLogFraming
{
    private readonly long _pageSize;
    private readonly int _headerSize;

    public FasterLogFraming(FasterLog log)
    {
        _pageSize = 1L << log.UnsafeGetLogPageSizeBits();
        _headerSize = log.HeaderSize;
    }

    /// <summary>The page size in bytes.</summary>
    public long PageSize => _pageSize;

    /// <summary>The record header size in bytes (the length word, then a checksum if the log has them).</summary>
    public int HeaderSize => _headerSize;

    /// <summary>The offset of <paramref name="address"/> in its page.</summary>
    public long OffsetInPage(long address) => address & (_pageSize - 1);

    /// <summary>The first address of the page after the one holding <paramref name="address"/>.</summary>
    public long NextPage(long address) => (address | (_pageSize - 1)) + 1;

    /// <summary>What the length word <paramref name="word"/> at <paramref name="address"/> is.</summary>
    public FrameWord Classify(long address, int word)
    {
        long offset = OffsetInPage(address);
        if (word == 0)
        {
            // Padding fills the end of a page; a page that starts with it holds nothing, yet the range reaches past it.
            return offset == 0 ? FrameWord.Damaged : FrameWord.Padding;
        }

        // A negative word is a FasterLog commit record, which only fast-commit mode writes; FasterLogs.Settings never
        // enables it, so in these logs a negative word is damage.
        return word > 0 && offset + _headerSize + (((long)word + 3) & ~3L) <= _pageSize ? FrameWord.Record : FrameWord.Damaged;
    }

    /// <summary>The error for a damaged length word <paramref name="word"/> at <paramref name="address"/>.</summary>
    public FasterLogReadException Damaged(long address, int word)
    {
        string what = word switch
        {
            0 => "is 0 at the start of a page (an uninitialized page inside the range)",
            < 0 => $"is {word} (negative: a commit record, which these logs never hold)",
            _ => $"is {word}: a record of that length does not fit in the page (offset {OffsetInPage(address)} of {_pageSize} bytes)",
        };
        return new FasterLogReadException(address, new InvalidDataException($"the record's length field {what}"));
    }
}
