using System.Buffers.Binary;
using Dse.Storage;

namespace Dse.Darq;

/// <summary>
/// Rebuilds the in-memory state from the log: at the open, from the last valid commit (<see cref="RecoverAsync"/>), and
/// after a restore under general speculation (<see cref="RebuildAsync"/>). One scan of the untruncated log: IN and SELF
/// entries become unconsumed messages, completions and checkpoints remove what they consumed, OUT entries are pending
/// until an ACK entry acknowledges them; voided ranges are skipped. Any entry that does not fit is corruption, named
/// with its address.
/// </summary>
internal sealed class DarqRecovery
{
    private readonly DarqCore _core;
    private readonly DarqProducerTable _producers;
    private readonly DarqInbox _inbox;
    private readonly DarqOutbox _outbox;
    private readonly DarqVersions _versions;
    private readonly DarqCommitter _committer;

    public DarqRecovery(DarqCore core, DarqProducerTable producers, DarqInbox inbox, DarqOutbox outbox, DarqVersions versions, DarqCommitter committer)
    {
        _core = core;
        _producers = producers;
        _inbox = inbox;
        _outbox = outbox;
        _versions = versions;
        _committer = committer;
    }

    /// <summary>
    /// Recovers FasterLog to the newest valid commit (a torn newer commit is ignored), takes the incarnation,
    /// deduplication table, sequence bounds and version records from its cookie, and scans [begin, committed tail) once.
    /// </summary>
    /// <exception cref="InvalidDataException">A committed entry or the commit's state is corrupt; the message names the address.</exception>
    public async Task RecoverAsync(CancellationToken cancellationToken)
    {
        var log = _core.Log;
        long commitNum = _core.CommitManager.LatestCommit;
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
                log.Recover(-1);
            }
            catch (Exception e) when (e is not OperationCanceledException)
            {
                throw new InvalidDataException($"DARQ '{_core.Name}' could not recover its log from commit {commitNum}: {e.Message}", e);
            }

            var cookie = log.RecoveredCookie ?? throw new InvalidDataException(
                $"DARQ '{_core.Name}': commit {commitNum} carries no DARQ state (no commit cookie); the log was not written by a DARQ.");
            state = DarqCommitState.Deserialize(cookie, $"DARQ '{_core.Name}', commit {commitNum}");
        }

        _core.Incarnation = state.Incarnation;
        _core.BeginSequence = state.BeginSequence;
        _versions.Recover(state);
        _producers.Recover(state.Producers);

        long begin = log.BeginAddress;
        long tail = log.TailAddress;
        var scan = new Scan(state.BeginSequence);
        await ApplyLogAsync(begin, tail, scan, cancellationToken).ConfigureAwait(false);
        if (scan.OpenStepEntries != 0)
        {
            throw _core.Corrupt(scan.LastAddress, $"the log ends inside a step: {scan.OpenStepEntries} SELF/OUT entries have no completion record");
        }

        if (scan.Expected != state.NextSequence)
        {
            throw _core.Corrupt(tail, $"the committed log holds entries up to sequence {scan.Expected - 1} but the commit records {state.NextSequence - 1}");
        }

        _core.NextSequence = scan.Expected;
        _committer.CommittedAt(tail, begin);
        _inbox.AssertCounters();
        DarqLogMessages.Opened(_core.Logger, _core.Name, commitNum, begin, tail, _inbox.Count, _producers.Count, _core.Incarnation);
    }

    /// <summary>Rebuilds unconsumed, consumed and pending-OUT state from the log's [begin, <paramref name="until"/>), skipping voided ranges. Under the gate.</summary>
    public async ValueTask RebuildAsync(long until)
    {
        _inbox.Clear();
        _outbox.Clear();
        var scan = new Scan(_core.BeginSequence);
        await ApplyLogAsync(_core.Log.BeginAddress, until, scan, CancellationToken.None).ConfigureAwait(false);
        _inbox.AssertCounters();
    }

    /// <summary>Applies every entry of [<paramref name="from"/>, <paramref name="until"/>) that is not voided, checking sequence numbers.</summary>
    private async ValueTask ApplyLogAsync(long from, long until, Scan scan, CancellationToken cancellationToken)
    {
        try
        {
            await foreach (var read in FasterLogs.ScanAsync(_core.Log, from, until, cancellationToken).ConfigureAwait(false))
            {
                cancellationToken.ThrowIfCancellationRequested();
                scan.LastAddress = read.Address;
                if (_versions.IsVoided(read.Address))
                {
                    // A restore voided this entry (general speculation): it never happened.
                    continue;
                }

                var span = read.Span;
                string? problem = DarqEntryFormat.TryParse(span, out var kind, out _, out long sequence);
                if (problem is not null)
                {
                    throw _core.Corrupt(read.Address, problem);
                }

                if (sequence != scan.Expected)
                {
                    throw _core.Corrupt(read.Address, $"entry sequence {sequence}, expected {scan.Expected} (entries are missing or out of place)");
                }

                scan.Expected++;
                Apply(kind, span, read.Address, sequence, scan);
            }
        }
        catch (FasterLogReadException e)
        {
            throw _core.Corrupt(e.Address, $"FasterLog cannot read the entry: {e.InnerException?.Message}");
        }
    }

    /// <summary>Applies one entry; <see cref="Scan.OpenStep"/> is where the step of the open SELF/OUT entries starts.</summary>
    private void Apply(DarqEntryKind kind, ReadOnlySpan<byte> entry, long address, long sequence, Scan scan)
    {
        var body = DarqEntryFormat.Body(entry);
        long incarnation = _core.Incarnation;
        if (scan.OpenStepEntries > 0 && kind is DarqEntryKind.In or DarqEntryKind.Register or DarqEntryKind.Ack or DarqEntryKind.Rollback)
        {
            throw _core.Corrupt(address, $"a {kind} entry inside a step (after {scan.OpenStepEntries} SELF/OUT entries without their completion)");
        }

        if (scan.OpenStepEntries == 0 && kind is DarqEntryKind.Self or DarqEntryKind.Out)
        {
            scan.OpenStep = new StepStart(address, sequence);
        }

        switch (kind)
        {
            case DarqEntryKind.In:
                var payload = body[16..];
                var start = new StepStart(address, sequence);
                _inbox.Add(address, _inbox.MayBufferIn(payload.Length)
                    ? new PendingMessage(DarqMessageKind.In, start, payload.ToArray())
                    : PendingMessage.SpilledIn(start, payload.Length));
                break;
            case DarqEntryKind.Self:
                var selfKind = (DarqEntryFormat.Flags(entry) & DarqEntryFormat.ActivityFlag) != 0 ? DarqMessageKind.Activity : DarqMessageKind.Self;
                _inbox.Add(address, new PendingMessage(selfKind, scan.OpenStep, body.ToArray()));
                scan.OpenStepEntries++;
                break;
            case DarqEntryKind.Out:
                int destinationLength = BinaryPrimitives.ReadUInt16LittleEndian(body);
                if (destinationLength is 0 or > DarqEntryFormat.MaxDestinationBytes || body.Length < 2 + destinationLength)
                {
                    throw _core.Corrupt(address, $"OUT entry with a destination of {destinationLength} bytes in a body of {body.Length}");
                }

                _outbox.Add(address, scan.OpenStep, _outbox.InternName(body.Slice(2, destinationLength)), body[(2 + destinationLength)..]);
                scan.OpenStepEntries++;
                break;
            case DarqEntryKind.Ack:
                int acked = BinaryPrimitives.ReadInt32LittleEndian(body);
                if (acked < 0 || body.Length != 8 + (8L * acked))
                {
                    throw _core.Corrupt(address, $"ACK entry claims {acked} LSNs in a body of {body.Length} bytes");
                }

                for (int i = 0; i < acked; i++)
                {
                    long lsn = BinaryPrimitives.ReadInt64LittleEndian(body[(8 + (8 * i))..]);
                    if (!_outbox.Remove(lsn) && lsn >= _core.Log.BeginAddress)
                    {
                        throw _core.Corrupt(address, $"the ACK entry acknowledges LSN {lsn}, which is no pending OUT message");
                    }
                }

                break;
            case DarqEntryKind.Completion:
                long stepIncarnation = BinaryPrimitives.ReadInt64LittleEndian(body);
                int stepEntries = BinaryPrimitives.ReadInt32LittleEndian(body[8..]);
                int count = BinaryPrimitives.ReadInt32LittleEndian(body[12..]);
                if (count < 0 || body.Length != 16 + (8L * count) || stepEntries != scan.OpenStepEntries || stepIncarnation > incarnation)
                {
                    throw _core.Corrupt(address,
                        $"completion record (incarnation {stepIncarnation}, {stepEntries} step entries, {count} consumed) does not match the log " +
                        $"({scan.OpenStepEntries} open step entries, incarnation {incarnation}, {body.Length} body bytes)");
                }

                for (int i = 0; i < count; i++)
                {
                    long consumed = BinaryPrimitives.ReadInt64LittleEndian(body[(16 + (8 * i))..]);
                    if (!_inbox.Consume(consumed) && consumed >= _core.Log.BeginAddress)
                    {
                        throw _core.Corrupt(address, $"the completion record consumes LSN {consumed}, which is no unconsumed message");
                    }
                }

                scan.OpenStepEntries = 0;
                break;
            case DarqEntryKind.Checkpoint:
                ApplyCheckpoint(body, address, scan);
                scan.OpenStepEntries = 0;
                break;
            case DarqEntryKind.Rollback:
                long voidFrom = BinaryPrimitives.ReadInt64LittleEndian(body[8..]);
                if (!_versions.IsVoided(voidFrom) && voidFrom != address)
                {
                    throw _core.Corrupt(address, $"ROLLBACK entry voids from address {voidFrom}, but the commit records no such voided range");
                }

                break;
            default:
                long registered = BinaryPrimitives.ReadInt64LittleEndian(body);
                if (registered > incarnation)
                {
                    throw _core.Corrupt(address, $"registration of incarnation {registered} is newer than the committed incarnation {incarnation}");
                }

                break;
        }
    }

    /// <summary>
    /// A CHECKPOINT record: like a completion, but the entries of its step must all be plain SELF messages and every
    /// replaced LSN still in the log an unconsumed plain SELF message from before the checkpoint.
    /// </summary>
    private void ApplyCheckpoint(ReadOnlySpan<byte> body, long address, Scan scan)
    {
        long incarnation = BinaryPrimitives.ReadInt64LittleEndian(body);
        int selfCount = BinaryPrimitives.ReadInt32LittleEndian(body[8..]);
        int count = BinaryPrimitives.ReadInt32LittleEndian(body[12..]);
        int openStepEntries = scan.OpenStepEntries;
        if (count < 1 || body.Length != 16 + (8L * count) || selfCount != openStepEntries || incarnation > _core.Incarnation)
        {
            throw _core.Corrupt(address,
                $"checkpoint record (incarnation {incarnation}, {selfCount} SELF entries, {count} replaced) does not match the log " +
                $"({openStepEntries} open step entries, incarnation {_core.Incarnation}, {body.Length} body bytes)");
        }

        long stepStart = openStepEntries > 0 ? scan.OpenStep.Lsn : address;
        if (openStepEntries > 0)
        {
            // The step's entries are the newest in the log; each must be a plain SELF message (no OUT, no activity).
            int plainSelf = 0;
            foreach (var (lsn, message) in _inbox.Messages)
            {
                if (lsn >= stepStart && message.Kind == DarqMessageKind.Self)
                {
                    plainSelf++;
                }
            }

            if (plainSelf != openStepEntries)
            {
                throw _core.Corrupt(address, $"the checkpoint's step holds {openStepEntries} entries of which only {plainSelf} are plain SELF messages");
            }
        }

        for (int i = 0; i < count; i++)
        {
            long lsn = BinaryPrimitives.ReadInt64LittleEndian(body[(16 + (8 * i))..]);
            if (lsn < stepStart && _inbox.TryGet(lsn, out var message) && message.Kind == DarqMessageKind.Self)
            {
                _inbox.Consume(lsn);
            }
            else if (lsn >= _core.Log.BeginAddress)
            {
                throw _core.Corrupt(address, $"the checkpoint record replaces LSN {lsn}, which is no unconsumed SELF message before it");
            }
        }
    }

    /// <summary>The state of one scan: the next expected sequence number and the step whose SELF/OUT entries are open.</summary>
    private sealed class Scan(long expected)
    {
        public long Expected { get; set; } = expected;

        public int OpenStepEntries { get; set; }

        public StepStart OpenStep { get; set; }

        public long LastAddress { get; set; }
    }
}
