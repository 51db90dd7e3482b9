using System.Buffers.Binary;
using FASTER.core;

namespace Dse.Darq;

/// <summary>Recovery: restore the last valid commit, then rebuild the in-memory state from the untruncated log.</summary>
public sealed partial class Darq
{
    /// <summary>
    /// Recovers FasterLog to the newest valid commit (a torn newer commit is ignored), takes the incarnation,
    /// deduplication table and sequence bounds from its cookie, and scans [begin, committed tail) once: IN and SELF
    /// entries become unconsumed messages, completions remove what they consumed, OUT entries are pending until an ACK
    /// entry acknowledges them.
    /// </summary>
    private async Task RecoverAsync(CancellationToken cancellationToken)
    {
        long commitNum = _commitManager.LatestCommit;
        DarqCommitState state;
        if (commitNum < 0)
        {
            state = new DarqCommitState();
        }
        else
        {
            try
            {
                // A fresh instance: FasterLog recovers only before anything else touches it.
                _log.Recover(-1);
            }
            catch (Exception e) when (e is not OperationCanceledException)
            {
                throw new InvalidDataException($"DARQ '{Name}' could not recover its log from commit {commitNum}: {e.Message}", e);
            }

            var cookie = _log.RecoveredCookie ?? throw new InvalidDataException(
                $"DARQ '{Name}': commit {commitNum} carries no DARQ state (no commit cookie); the log was not written by a DARQ.");
            state = DarqCommitState.Deserialize(cookie, $"DARQ '{Name}', commit {commitNum}");
        }

        _incarnation = state.Incarnation;
        _beginSequence = state.BeginSequence;
        RecoverSpeculation(state);
        foreach (var (producer, sequence) in state.Producers)
        {
            _producers[producer] = sequence;
        }

        StartIdleProducerClock();

        long begin = _log.BeginAddress;
        long tail = _log.TailAddress;
        long expected = state.BeginSequence;
        int openStepEntries = 0;
        var openStep = default(StepStart);
        long address = begin;
        using (var iterator = _log.Scan(begin, tail, name: null, recover: false))
        {
            while (true)
            {
                cancellationToken.ThrowIfCancellationRequested();
                byte[] entry;
                int length;
                long next;
                try
                {
                    if (!iterator.GetNext(out entry, out length, out address, out next))
                    {
                        if (await iterator.WaitAsync(cancellationToken).ConfigureAwait(false))
                        {
                            continue;
                        }

                        break;
                    }
                }
                catch (Exception e) when (e is FasterException or IndexOutOfRangeException or ArgumentException or OverflowException)
                {
                    throw Corrupt(address, $"FasterLog cannot read the entry: {e.Message}");
                }

                if (IsVoided(address))
                {
                    // A restore voided this entry (general speculation): it never happened.
                    continue;
                }

                var span = entry.AsSpan(0, length);
                string? problem = DarqEntryFormat.TryParse(span, out var kind, out _, out long sequence);
                if (problem is not null)
                {
                    throw Corrupt(address, problem);
                }

                if (sequence != expected)
                {
                    throw Corrupt(address, $"entry sequence {sequence}, expected {expected} (entries are missing or out of place)");
                }

                expected++;
                ApplyRecovered(kind, span, address, sequence, ref openStepEntries, ref openStep);
            }
        }

        if (openStepEntries != 0)
        {
            throw Corrupt(address, $"the log ends inside a step: {openStepEntries} SELF/OUT entries have no completion record");
        }

        if (expected != state.NextSequence)
        {
            throw Corrupt(tail, $"the committed log holds entries up to sequence {expected - 1} but the commit records {state.NextSequence - 1}");
        }

        _nextSequence = expected;
        _lastCommitTail = tail;
        _lastCommitBegin = begin;
        _unconsumedCount = _unconsumed.Count;
        _pendingOutCount = _pendingOut.Count;
        AssertSelfCounters();
        DarqLog.Opened(_logger, Name, commitNum, begin, tail, _unconsumed.Count, _producers.Count, _incarnation);
    }

    /// <summary>Applies one recovered entry; <paramref name="openStep"/> is where the step of the open SELF/OUT entries starts.</summary>
    private void ApplyRecovered(DarqEntryKind kind, ReadOnlySpan<byte> entry, long address, long sequence, ref int openStepEntries,
        ref StepStart openStep)
    {
        var body = DarqEntryFormat.Body(entry);
        if (openStepEntries > 0 && kind is DarqEntryKind.In or DarqEntryKind.Register or DarqEntryKind.Ack or DarqEntryKind.Rollback)
        {
            throw Corrupt(address, $"a {kind} entry inside a step (after {openStepEntries} SELF/OUT entries without their completion)");
        }

        if (openStepEntries == 0 && kind is DarqEntryKind.Self or DarqEntryKind.Out)
        {
            openStep = new StepStart(address, sequence);
        }

        switch (kind)
        {
            case DarqEntryKind.In:
                var payload = body[16..];
                var start = new StepStart(address, sequence);
                AddUnconsumed(address, MayBufferIn(payload.Length) ? new PendingMessage(DarqMessageKind.In, start, payload.ToArray()) : SpilledIn(start, payload.Length));
                break;
            case DarqEntryKind.Self:
                var selfKind = (DarqEntryFormat.Flags(entry) & DarqEntryFormat.ActivityFlag) != 0 ? DarqMessageKind.Activity : DarqMessageKind.Self;
                AddUnconsumed(address, new PendingMessage(selfKind, openStep, body.ToArray()));
                openStepEntries++;
                break;
            case DarqEntryKind.Out:
                int destinationLength = BinaryPrimitives.ReadUInt16LittleEndian(body);
                if (destinationLength is 0 or > DarqEntryFormat.MaxDestinationBytes || body.Length < 2 + destinationLength)
                {
                    throw Corrupt(address, $"OUT entry with a destination of {destinationLength} bytes in a body of {body.Length}");
                }

                AddPendingOut(address, openStep, DestinationName(body.Slice(2, destinationLength)), body[(2 + destinationLength)..]);
                openStepEntries++;
                break;
            case DarqEntryKind.Ack:
                int acked = BinaryPrimitives.ReadInt32LittleEndian(body);
                if (acked < 0 || body.Length != 8 + (8L * acked))
                {
                    throw Corrupt(address, $"ACK entry claims {acked} LSNs in a body of {body.Length} bytes");
                }

                for (int i = 0; i < acked; i++)
                {
                    long lsn = BinaryPrimitives.ReadInt64LittleEndian(body[(8 + (8 * i))..]);
                    if (!RemovePendingOut(lsn) && lsn >= _log.BeginAddress)
                    {
                        throw Corrupt(address, $"the ACK entry acknowledges LSN {lsn}, which is no pending OUT message");
                    }
                }

                break;
            case DarqEntryKind.Completion:
                long incarnation = BinaryPrimitives.ReadInt64LittleEndian(body);
                int stepEntries = BinaryPrimitives.ReadInt32LittleEndian(body[8..]);
                int count = BinaryPrimitives.ReadInt32LittleEndian(body[12..]);
                if (count < 0 || body.Length != 16 + (8L * count) || stepEntries != openStepEntries || incarnation > _incarnation)
                {
                    throw Corrupt(address,
                        $"completion record (incarnation {incarnation}, {stepEntries} step entries, {count} consumed) does not match the log " +
                        $"({openStepEntries} open step entries, incarnation {_incarnation}, {body.Length} body bytes)");
                }

                for (int i = 0; i < count; i++)
                {
                    long consumed = BinaryPrimitives.ReadInt64LittleEndian(body[(16 + (8 * i))..]);
                    if (RemoveUnconsumed(consumed))
                    {
                        _consumed.Add(consumed);
                    }
                    else if (consumed >= _log.BeginAddress)
                    {
                        throw Corrupt(address, $"the completion record consumes LSN {consumed}, which is no unconsumed message");
                    }
                }

                openStepEntries = 0;
                break;
            case DarqEntryKind.Checkpoint:
                ApplyRecoveredCheckpoint(body, address, openStepEntries, openStep);
                openStepEntries = 0;
                break;
            case DarqEntryKind.Rollback:
                long voidFrom = BinaryPrimitives.ReadInt64LittleEndian(body[8..]);
                if (!IsVoided(voidFrom) && voidFrom != address)
                {
                    throw Corrupt(address, $"ROLLBACK entry voids from address {voidFrom}, but the commit records no such voided range");
                }

                break;
            default:
                long registered = BinaryPrimitives.ReadInt64LittleEndian(body);
                if (registered > _incarnation)
                {
                    throw Corrupt(address, $"registration of incarnation {registered} is newer than the committed incarnation {_incarnation}");
                }

                break;
        }
    }

    private InvalidDataException Corrupt(long address, string detail)
        => new($"DARQ '{Name}' log on device '{_options.LogDevice!.FileName}' is corrupt at address {address} (0x{address:X}): {detail}.");
}
