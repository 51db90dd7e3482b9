using Dse.Storage;
using FASTER.core;
using Microsoft.Extensions.Logging;

namespace Dse.Darq;

/// <summary>Opening a DARQ's storage: its fences first, then its commit manager, with a clear refusal when the commit slots were sized otherwise.</summary>
internal static class DarqStorage
{
    /// <summary>
    /// Takes the storage fences (before anything is read: an instance still writing must be fenced before recovery sees
    /// the storage) and opens the commit manager. On failure everything taken is released, and owned devices disposed.
    /// </summary>
    /// <exception cref="InvalidOperationException">The commit slots were sized by another <see cref="DarqOptions.MaxProducers"/>; nothing was written.</exception>
    public static async Task<(DarqCommitManager CommitManager, StorageFence[] Fences)> OpenAsync(DarqOptions options, ILoggerFactory? loggerFactory, ILogger logger,
        CancellationToken cancellationToken)
    {
        // FasterLog's recovery info (addresses, commit number, iterators) plus the cookie, with room to spare. The slots
        // are sized the same in every speculation mode (a log may be reopened in another mode, and the second slot's
        // offset follows from the size); revision-3 DARQs sized them without the speculation room outside general mode.
        int legacyMetadata = LegacyCommitMetadataCapacity(options.MaxProducers);
        int maxMetadata = CommitMetadataCapacity(options.MaxProducers);
        StorageFence[] fences = [];
        try
        {
            fences = await DarqCore.AcquireFencesAsync(options, loggerFactory, cancellationToken).ConfigureAwait(false);
            var commitManager = await DarqCommitManager.OpenAsync(options.CommitDevice!, maxMetadata, legacyMetadata, options.OwnsDevices, logger, options.Name)
                .ConfigureAwait(false);
            return (commitManager, fences);
        }
        catch (Exception e)
        {
            if (options.OwnsDevices)
            {
                DisposeDevices(options.CommitDevice!, options.LogDevice!);
            }

            await DarqCore.ReleaseAsync(fences).ConfigureAwait(false);
            if (e is DarqCommitSlotSizeMismatchException mismatch)
            {
                throw SlotSizeMismatch(options, mismatch);
            }

            throw;
        }
    }

    /// <summary>
    /// The commit metadata capacity for a producer limit: the largest cookie plus 4 KiB for FasterLog's own fields plus the
    /// speculation room, the same in every speculation mode (a log may be reopened in another mode, and the second slot's
    /// offset follows from the size).
    /// </summary>
    internal static int CommitMetadataCapacity(int maxProducers) => LegacyCommitMetadataCapacity(maxProducers) + DarqCommitState.SpeculationRoom;

    /// <summary>The capacity revision-3 DARQs sized the commit slots with outside general speculation: no speculation room.</summary>
    internal static int LegacyCommitMetadataCapacity(int maxProducers) => DarqCommitState.MaxSize(maxProducers) + 4096;

    /// <summary>
    /// The refusal of an open whose <see cref="DarqOptions.MaxProducers"/> sizes the commit slots otherwise than the records
    /// on the commit device state, naming the MaxProducers values that give the recorded size.
    /// </summary>
    private static InvalidOperationException SlotSizeMismatch(DarqOptions options, DarqCommitSlotSizeMismatchException mismatch)
    {
        // Slots are whole 4 KiB blocks, so a range of MaxProducers values shares one size; sizes grow with MaxProducers.
        long recorded = mismatch.RecordedSlotSize;
        int lowest = FirstMaxProducersWithSlotsOf(recorded);
        int highest = FirstMaxProducersWithSlotsOf(recorded + 1) - 1;
        string created = lowest > highest
            ? $"which no MaxProducers between 1 and {DarqOptions.MaxProducersLimit} gives (not a commit device of this DARQ revision?)"
            : lowest == highest ? $"which MaxProducers {lowest} gives" : $"which MaxProducers {lowest} to {highest} give";
        return new InvalidOperationException(
            $"DARQ '{options.Name}' was created with another DarqOptions.MaxProducers: its commit records were written with {recorded}-byte " +
            $"commit slots, {created}, but this open has MaxProducers {options.MaxProducers}, which gives {mismatch.SlotSize}-byte slots " +
            "(the second slot's offset follows from the size). Reopen it with the MaxProducers it was created with; nothing was changed on its devices.",
            mismatch);

        // The smallest MaxProducers whose slots are at least this large (MaxProducersLimit + 1 when none).
        static int FirstMaxProducersWithSlotsOf(long slotSize)
        {
            int low = 1;
            int high = DarqOptions.MaxProducersLimit + 1;
            while (low < high)
            {
                int middle = low + ((high - low) / 2);
                if (DarqCommitManager.SlotSizeFor(CommitMetadataCapacity(middle)) >= slotSize)
                {
                    high = middle;
                }
                else
                {
                    low = middle + 1;
                }
            }

            return low;
        }
    }

    /// <summary>Disposes devices one after the other, each even when an earlier one throws.</summary>
    private static void DisposeDevices(IDevice first, IDevice second)
    {
        try
        {
            first.Dispose();
        }
        finally
        {
            second.Dispose();
        }
    }
}
