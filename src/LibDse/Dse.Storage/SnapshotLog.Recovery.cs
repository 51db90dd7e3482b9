using System.Collections.Immutable;
using static Dse.Storage.SnapshotRecordFormat;

namespace Dse.Storage;

/// <summary>Recovery: the scan that rebuilds the live records and finds the tail.</summary>
public sealed partial class SnapshotLog
{
    /// <summary>
    /// Scans records from address 0. Every acknowledged record is followed on the device by the next record or by a
    /// zero sector, and a record's header sector is written last, so at the first position after the valid records the
    /// scan finds zeros (the clean end), a valid header whose payload is torn (dropped), or damage (reported).
    /// </summary>
    private async Task RecoverAsync(CancellationToken cancellationToken)
    {
        var records = ImmutableList.CreateBuilder<SnapshotRecord>();
        long address = 0;
        ulong sequence = 0;
        var buffer = new AlignedBuffer(_sectorSize);
        try
        {
            while (true)
            {
                cancellationToken.ThrowIfCancellationRequested();
                var (status, header, problem) = await ProbeAsync(buffer, address, sequence).ConfigureAwait(false);
                if (status == HeaderStatus.Empty)
                {
                    break;
                }

                if (status == HeaderStatus.Invalid)
                {
                    throw Corrupt(address, $"the sector at this address is neither zero nor a valid record header: {problem}");
                }

                long recordLength = RecordLength(header.PayloadLength, _sectorSize);
                if (buffer.Length < recordLength)
                {
                    // Grow, keeping the header sector that was just read.
                    var larger = new AlignedBuffer(checked((int)recordLength));
                    buffer.Span[.._sectorSize].CopyTo(larger.Span);
                    buffer.Dispose();
                    buffer = larger;
                }

                string? tear = await ReadPayloadAsync(buffer, header, recordLength).ConfigureAwait(false);
                if (tear is not null)
                {
                    // Torn, unless a valid record follows: then this one had been acknowledged and was damaged later.
                    long next = address + recordLength;
                    var (nextStatus, _, _) = await ProbeAsync(buffer, next, sequence + 1).ConfigureAwait(false);
                    if (nextStatus == HeaderStatus.Valid)
                    {
                        throw Corrupt(address, $"record (sequence {sequence}, key {header.Key}) {tear}, yet a valid record follows at address {next}");
                    }

                    StorageLogMessages.SnapshotLogTornTail(_logger, _device.FileName, address, sequence, tear);
                    break;
                }

                var payload = buffer.Span.Slice(HeaderSize, header.PayloadLength).ToArray();
                var record = new SnapshotRecord(header.Key, sequence, address, payload);
                switch (header.Kind)
                {
                    case SnapshotRecordKind.Data:
                        records.Add(record);
                        break;
                    case SnapshotRecordKind.DropAfter:
                        records.RemoveAll(r => r.Key > header.Key);
                        break;
                    default:
                        records.RemoveAll(r => r.Key < header.Key);
                        break;
                }

                address += recordLength;
                sequence++;
            }
        }
        finally
        {
            buffer.Dispose();
        }

        _records = records.ToImmutable();
        _nextSequence = sequence;
        _tailAddress = address;
        StorageLogMessages.SnapshotLogRecovered(_logger, _device.FileName, _records.Count, sequence, address);
    }

    /// <summary>Reads the sector at <paramref name="address"/> into <paramref name="buffer"/> and classifies it.</summary>
    private async Task<(HeaderStatus Status, RecordHeader Header, string Problem)> ProbeAsync(AlignedBuffer buffer, long address, ulong sequence)
    {
        int read = await DeviceIo.ReadAsync(_device, address, buffer.Pointer, _sectorSize).ConfigureAwait(false);
        var status = ParseHeader(buffer.Span[..read], address, sequence, out var header, out string problem);
        return (status, header, problem);
    }

    /// <summary>Reads the whole record into <paramref name="buffer"/>; returns why it is torn, or <see langword="null"/> when it is intact.</summary>
    private async Task<string?> ReadPayloadAsync(AlignedBuffer buffer, RecordHeader header, long recordLength)
    {
        // The header sector is already in the buffer; fetch the remaining sectors.
        if (recordLength > _sectorSize)
        {
            int rest = (int)(recordLength - _sectorSize);
            int read = await DeviceIo.ReadAsync(_device, header.Address + _sectorSize, buffer.Pointer + _sectorSize, rest).ConfigureAwait(false);
            if (read < rest)
            {
                return $"is incomplete: only {_sectorSize + read} of its {recordLength} bytes are on the device";
            }
        }

        return PayloadMatches(header, buffer.Span.Slice(HeaderSize, header.PayloadLength))
            ? null
            : "fails its payload checksum";
    }

    private InvalidDataException Corrupt(long address, string detail)
        => new($"Snapshot log on device '{_device.FileName}' is corrupt at address {address} (0x{address:X}): {detail}.");
}
