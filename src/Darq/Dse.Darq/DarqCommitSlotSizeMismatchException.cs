namespace Dse.Darq;

/// <summary>
/// A commit record on the commit device states another slot size than the opening DARQ sizes its slots with: the DARQ was
/// created with another <see cref="DarqOptions.MaxProducers"/>. Thrown by <see cref="DarqCommitManager.OpenAsync"/> before
/// anything is written; <see cref="Darq.OpenAsync"/> turns it into an <see cref="InvalidOperationException"/> naming the
/// MaxProducers values.
/// </summary>
internal sealed class DarqCommitSlotSizeMismatchException : InvalidOperationException
{
    /// <summary>Creates the exception.</summary>
    /// <param name="recordedSlotSize">The slot size the record on the device states.</param>
    /// <param name="slotSize">The slot size of the open that found it.</param>
    /// <param name="message">The message, naming the DARQ, the device and both sizes.</param>
    public DarqCommitSlotSizeMismatchException(int recordedSlotSize, int slotSize, string message)
        : base(message)
    {
        RecordedSlotSize = recordedSlotSize;
        SlotSize = slotSize;
    }

    /// <summary>The slot size, in bytes, the DARQ's commit records were written with.</summary>
    public int RecordedSlotSize { get; }

    /// <summary>The slot size, in bytes, the refused open sized the slots with.</summary>
    public int SlotSize { get; }
}
