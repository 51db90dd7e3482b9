using System.Runtime.CompilerServices;
using Dse.Darq.Grpc.V1;
using Google.Protobuf;
using Grpc.Core;
using Microsoft.Extensions.Logging.Abstractions;
using Microsoft.Extensions.Logging;

namespace Dse.Darq.Grpc;

/// <summary>
/// A processor of a remote DARQ: registered with a persisted incarnation, it streams the messages to step (replay first,
/// then live IN traffic) and steps with the same <see cref="DarqStep"/> as a co-located <see cref="DarqProcessor"/>.
/// A newer registration ends the stream with a <see cref="DarqStaleIncarnationException"/>, and steps are refused from
/// then on. Disposing it cancels the stream (the registration stands until a newer one).
/// </summary>
/// <remarks>
/// It keeps a table of its DARQ's unconsumed plain SELF messages, for <see cref="CheckpointAsync(DarqSnapshot, bool, CancellationToken)"/>:
/// the replayed ones as <see cref="ReadAllAsync"/> yields them, plus those its own steps and checkpoints append, minus
/// those they consume or replace. It learns only what passes through it: after a step or checkpoint whose outcome is
/// unknown (cancelled, or not durable with <c>waitDurable</c>), register again, and the replay rebuilds the table.
/// </remarks>
public sealed class RemoteDarqProcessor : IDisposable
{
    private readonly DarqService.DarqServiceClient _client;
    private readonly AsyncServerStreamingCall<ProcessorEvent> _call;
    private readonly CancellationTokenSource _closing;
    private int _reading;

    /// <summary>The open instance of the DARQ this processor registered with (0 from a server that does not say).</summary>
    private readonly long _instance;

    /// <summary>
    /// The unconsumed plain SELF messages this processor knows of, by LSN, and the sum of their payload lengths; guarded by
    /// the table itself (as a lock). Updated only once the DARQ accepted what changes them.
    /// </summary>
    private readonly SortedDictionary<long, ReadOnlyMemory<byte>> _selfMessages = [];

    private long _selfBytes;

    /// <summary>Replayed messages read so far; under the table's lock.</summary>
    private int _replayRead;

    /// <summary>Whether every replayed SELF message was read (they come first in the replay); under the table's lock.</summary>
    private bool _selfReplayRead;

    /// <summary>
    /// SELF LSNs a step or checkpoint consumed or replaced before <see cref="_selfReplayRead"/>: a replayed message among
    /// them, read later, is no longer unconsumed. Under the table's lock; emptied once the SELF replay is read.
    /// </summary>
    private readonly HashSet<long> _goneBeforeReplay = [];

    private RemoteDarqProcessor(DarqService.DarqServiceClient client, AsyncServerStreamingCall<ProcessorEvent> call, CancellationTokenSource closing,
        string darq, Registration registration)
    {
        _client = client;
        _call = call;
        _closing = closing;
        Darq = darq;
        Incarnation = registration.Incarnation;
        ReplayCount = registration.ReplayCount;
        _instance = registration.Instance;
        _selfReplayRead = ReplayCount == 0;
    }

    /// <summary>The DARQ's name.</summary>
    public string Darq { get; }

    /// <summary>The persisted incarnation this registration received.</summary>
    public long Incarnation { get; }

    /// <summary>How many messages the replay holds; they come before any live message.</summary>
    public int ReplayCount { get; }

    /// <summary>
    /// How many unconsumed plain SELF messages (activities excluded) this processor knows of: what
    /// <see cref="CheckpointAsync(DarqSnapshot, bool, CancellationToken)"/> would hand its snapshot function.
    /// </summary>
    public int UnconsumedSelfCount
    {
        get
        {
            lock (_selfMessages)
            {
                return _selfMessages.Count;
            }
        }
    }

    /// <summary>The sum of the payload lengths of the unconsumed plain SELF messages this processor knows of, in bytes.</summary>
    public long UnconsumedSelfBytes
    {
        get
        {
            lock (_selfMessages)
            {
                return _selfBytes;
            }
        }
    }

    /// <summary>Registers a processor with a remote DARQ.</summary>
    /// <param name="channel">The channel to the server hosting the DARQ (the caller owns it).</param>
    /// <param name="darq">The DARQ's name on that server.</param>
    /// <param name="cancellationToken">Cancels waiting for the registration (once the server appended it, it stands).</param>
    /// <returns>The registered processor.</returns>
    /// <exception cref="RpcException">NOT_FOUND for an unknown DARQ, UNAVAILABLE when it is closed or unreachable.</exception>
    public static Task<RemoteDarqProcessor> RegisterAsync(ChannelBase channel, string darq, CancellationToken cancellationToken = default)
    {
        ArgumentNullException.ThrowIfNull(channel);
        return RegisterAsync(channel.CreateCallInvoker(), darq, cancellationToken);
    }

    /// <summary>Registers a processor with a remote DARQ over a call invoker (for example a channel with interceptors).</summary>
    /// <param name="callInvoker">The call invoker; the caller owns its channel.</param>
    /// <param name="darq">The DARQ's name on that server.</param>
    /// <param name="cancellationToken">Cancels waiting for the registration (once the server appended it, it stands).</param>
    /// <returns>The registered processor.</returns>
    /// <exception cref="RpcException">NOT_FOUND for an unknown DARQ, UNAVAILABLE when it is closed or unreachable.</exception>
    /// <exception cref="OperationCanceledException"><paramref name="cancellationToken"/> was cancelled.</exception>
    public static async Task<RemoteDarqProcessor> RegisterAsync(CallInvoker callInvoker, string darq, CancellationToken cancellationToken = default)
    {
        ArgumentNullException.ThrowIfNull(callInvoker);
        ArgumentException.ThrowIfNullOrEmpty(darq);
        var client = new DarqService.DarqServiceClient(callInvoker);
        var closing = new CancellationTokenSource();
        var call = client.Register(new RegisterRequest { Darq = darq }, cancellationToken: closing.Token);
        try
        {
            using (cancellationToken.UnsafeRegister(static state => ((CancellationTokenSource)state!).Cancel(), closing))
            {
                if (!await call.ResponseStream.MoveNext(CancellationToken.None).ConfigureAwait(false)
                    || call.ResponseStream.Current.EventCase != ProcessorEvent.EventOneofCase.Registration)
                {
                    throw new RpcException(new Status(StatusCode.Internal,
                        $"DARQ '{darq}': the Register stream did not start with a registration; the server does not speak dse.darq.v1."));
                }
            }

            cancellationToken.ThrowIfCancellationRequested();
            return new RemoteDarqProcessor(client, call, closing, darq, call.ResponseStream.Current.Registration);
        }
        catch (RpcException e) when (e.StatusCode == StatusCode.Cancelled && cancellationToken.IsCancellationRequested)
        {
            call.Dispose();
            closing.Dispose();
            throw new OperationCanceledException($"Registering a processor with DARQ '{darq}' was cancelled; if the server appended the registration, it stands.",
                e, cancellationToken);
        }
        catch
        {
            call.Dispose();
            closing.Dispose();
            throw;
        }
    }

    /// <summary>Streams the messages to step until the DARQ closes (UNAVAILABLE) or a newer processor registers.</summary>
    /// <param name="cancellationToken">Stops the enumeration (and the stream: read once).</param>
    /// <returns>The messages, in the order the DARQ sends them.</returns>
    /// <exception cref="DarqStaleIncarnationException">A newer processor registered; this one must stop.</exception>
    /// <exception cref="RpcException">UNAVAILABLE: the DARQ closed or the server stopped or is unreachable; register again.</exception>
    public async IAsyncEnumerable<DarqMessage> ReadAllAsync([EnumeratorCancellation] CancellationToken cancellationToken = default)
    {
        if (Interlocked.Exchange(ref _reading, 1) != 0)
        {
            throw new InvalidOperationException($"The message stream of remote processor {Incarnation} of DARQ '{Darq}' is read once.");
        }

        var stream = _call.ResponseStream;
        while (true)
        {
            bool more;
            try
            {
                more = await stream.MoveNext(cancellationToken).ConfigureAwait(false);
            }
            catch (RpcException e) when (DarqRpcErrors.ToDarqException(e) is { } refused)
            {
                throw refused;
            }
            catch (RpcException e) when (e.StatusCode == StatusCode.Cancelled && cancellationToken.IsCancellationRequested)
            {
                throw new OperationCanceledException($"Reading the stream of remote processor {Incarnation} of DARQ '{Darq}' was cancelled.", e, cancellationToken);
            }

            if (!more)
            {
                yield break;
            }

            var current = stream.Current;
            if (current.EventCase != ProcessorEvent.EventOneofCase.Message)
            {
                continue;
            }

            var message = current.Message;
            // The wire values are DarqMessageKind's.
            var kind = (DarqMessageKind)(int)message.Kind;
            NoteRead(message.Lsn, kind, message.Payload.Memory, message.IsReplay);
            yield return new DarqMessage(message.Lsn, kind, message.Payload.Memory, message.IsReplay);
        }
    }

    /// <summary>Steps under this processor's incarnation: validated and appended atomically by the DARQ.</summary>
    /// <param name="step">The step.</param>
    /// <param name="waitDurable">Return only once the step is durable.</param>
    /// <param name="cancellationToken">Cancels the call; a step the DARQ appended is not undone.</param>
    /// <returns>Where the step's entries went.</returns>
    /// <exception cref="DarqStaleIncarnationException">A newer processor registered (or the DARQ restarted).</exception>
    /// <exception cref="DarqStepRejectedException">A consumed LSN failed validation; nothing was applied.</exception>
    /// <exception cref="RpcException">
    /// INVALID_ARGUMENT for a malformed step (empty, too large), UNAVAILABLE when the DARQ cannot serve (nothing appended);
    /// ABORTED (<see cref="DarqRpcErrors.NotDurable"/>) when <paramref name="waitDurable"/> and the step was appended but
    /// could not be made durable: do not resend it, await the <see cref="DarqRpcErrors.DurableAtKey"/> trailer's address.
    /// </exception>
    public async Task<DarqStepResult> StepAsync(DarqStep step, bool waitDurable = false, CancellationToken cancellationToken = default)
    {
        ArgumentNullException.ThrowIfNull(step);
        var request = new StepRequest { Darq = Darq, Incarnation = Incarnation, WaitDurable = waitDurable };
        request.Consumed.Add(step.Consumed);
        for (int i = 0; i < step.SelfMessages.Count; i++)
        {
            var payload = step.SelfMessages[i];
            if (step.IsActivity(i))
            {
                // An activity travels as its name and input; the server records it with DarqStep.AddActivity again.
                var activity = DarqActivity.FromMessage(new DarqMessage(0, DarqMessageKind.Activity, payload, IsReplay: false), Darq);
                request.SelfMessages.Add(new SelfMessage { Payload = ByteString.CopyFrom(activity.Input.Span), Activity = activity.Name });
            }
            else
            {
                request.SelfMessages.Add(new SelfMessage { Payload = ByteString.CopyFrom(payload.Span) });
            }
        }

        foreach (var message in step.OutMessages)
        {
            request.OutMessages.Add(new OutMessage { Destination = message.Destination, Payload = ByteString.CopyFrom(message.Payload.Span) });
        }

        StepReply reply;
        try
        {
            reply = await _client.StepAsync(request, cancellationToken: cancellationToken).ConfigureAwait(false);
        }
        catch (RpcException e) when (DarqRpcErrors.ToDarqException(e) is { } refused)
        {
            throw refused;
        }
        catch (RpcException e) when (e.StatusCode == StatusCode.Cancelled && cancellationToken.IsCancellationRequested)
        {
            throw new OperationCanceledException($"A step of remote processor {Incarnation} of DARQ '{Darq}' was cancelled; it may or may not have been appended.", e, cancellationToken);
        }

        lock (_selfMessages)
        {
            RemoveSelf(request.Consumed);
            for (int i = 0; i < reply.SelfLsns.Count && i < request.SelfMessages.Count; i++)
            {
                var self = request.SelfMessages[i];
                if (self.Activity.Length == 0)
                {
                    AddSelf(reply.SelfLsns[i], self.Payload.Memory);
                }
            }
        }

        var result = new DarqStepResult([.. reply.SelfLsns], [.. reply.OutLsns], reply.CompletionLsn, reply.DurableAt);
        if (Volatile.Read(ref _autoCheckpoint) is { } policy)
        {
            await CheckpointIfDueAsync(policy).ConfigureAwait(false);
        }

        return result;
    }

    /// <summary>
    /// Consumes one message and appends nothing else: the consume-only step, the same as <see cref="StepAsync"/> with
    /// <c>new DarqStep().Consume(lsn)</c> (one call, the same validation and errors), with the co-located
    /// <see cref="DarqProcessor.ConsumeAsync(long, CancellationToken)"/>'s result type.
    /// </summary>
    /// <param name="lsn">The IN or SELF message to consume.</param>
    /// <param name="waitDurable">Return only once the step is durable.</param>
    /// <param name="cancellationToken">Cancels the call; a step the DARQ appended is not undone.</param>
    /// <returns>Where the completion record went and the address to await for durability.</returns>
    /// <exception cref="DarqStaleIncarnationException">A newer processor registered (or the DARQ restarted).</exception>
    /// <exception cref="DarqStepRejectedException">The message is not an unconsumed IN or SELF message; nothing was applied.</exception>
    /// <exception cref="RpcException">As for <see cref="StepAsync"/>.</exception>
    public async Task<DarqConsumeResult> ConsumeAsync(long lsn, bool waitDurable = false, CancellationToken cancellationToken = default)
        => new((await StepAsync(new DarqStep().Consume(lsn), waitDurable, cancellationToken).ConfigureAwait(false)).CompletionLsn);

    /// <summary>
    /// Takes a checkpoint under this processor's incarnation: replaces the named unconsumed plain SELF messages by
    /// <paramref name="snapshot"/>, atomically (see <see cref="Darq.CheckpointAsync(long, IReadOnlyList{long}, IReadOnlyList{ReadOnlyMemory{byte}}, CancellationToken)"/>).
    /// </summary>
    /// <param name="replace">The SELF messages to replace (at least one).</param>
    /// <param name="snapshot">The replacing SELF payloads, in order; may be empty.</param>
    /// <param name="waitDurable">Return only once the checkpoint is durable.</param>
    /// <param name="cancellationToken">Cancels the call; a checkpoint the DARQ appended is not undone.</param>
    /// <returns>The replaced LSNs, the snapshot's LSNs and the address to await for durability.</returns>
    /// <exception cref="DarqStaleIncarnationException">A newer processor registered (or the DARQ restarted).</exception>
    /// <exception cref="DarqStepRejectedException">A replaced LSN is no unconsumed plain SELF message; nothing was applied.</exception>
    /// <exception cref="RpcException">INVALID_ARGUMENT for nothing to replace or a snapshot too large, UNAVAILABLE when the DARQ cannot serve.</exception>
    public Task<DarqCheckpointResult> CheckpointAsync(IReadOnlyList<long> replace, IReadOnlyList<ReadOnlyMemory<byte>> snapshot, bool waitDurable = false,
        CancellationToken cancellationToken = default)
    {
        ArgumentNullException.ThrowIfNull(replace);
        ArgumentNullException.ThrowIfNull(snapshot);
        return SendCheckpointAsync(replace, snapshot, waitDurable, cancellationToken);
    }

    /// <summary>
    /// Compacts every unconsumed plain SELF message this processor knows of (activities are left alone) through
    /// <paramref name="snapshot"/>: the messages it returns replace them, atomically, under this processor's incarnation
    /// (the explicit-LSN checkpoint, <see cref="CheckpointAsync(IReadOnlyList{long}, IReadOnlyList{ReadOnlyMemory{byte}}, bool, CancellationToken)"/>,
    /// with the LSNs of <see cref="UnconsumedSelfCount"/> messages). With none, nothing is sent and the snapshot function
    /// is not called.
    /// </summary>
    /// <param name="snapshot">Turns the SELF messages (in LSN order) into their replacement; runs on the caller's thread, before the call.</param>
    /// <param name="waitDurable">Return only once the checkpoint is durable.</param>
    /// <param name="cancellationToken">Cancels the call; a checkpoint the DARQ appended is not undone.</param>
    /// <returns>The replaced LSNs, the snapshot's LSNs and the address to await for durability (-1 and 0 when nothing was sent).</returns>
    /// <exception cref="InvalidOperationException">
    /// The replay's SELF messages have not all been read from <see cref="ReadAllAsync"/> yet (the table would miss them),
    /// or the snapshot function returned null; nothing was sent.
    /// </exception>
    /// <exception cref="DarqStaleIncarnationException">A newer processor registered (or the DARQ restarted).</exception>
    /// <exception cref="DarqStepRejectedException">A message in the table is no longer unconsumed (a concurrent step consumed it); nothing was applied.</exception>
    /// <exception cref="RpcException">INVALID_ARGUMENT for a snapshot too large, UNAVAILABLE when the DARQ cannot serve.</exception>
    /// <remarks>
    /// A refused checkpoint, or a snapshot function that throws, leaves the table as it was. The remote DARQ does not hold its
    /// gate while the snapshot runs (unlike <see cref="DarqProcessor.CheckpointAsync(DarqSnapshot, CancellationToken)"/>):
    /// steps of this processor taken meanwhile are not in the snapshot, and the snapshot's messages come after theirs in
    /// the log; do not step while a checkpoint runs when the order of SELF messages matters.
    /// </remarks>
    public Task<DarqCheckpointResult> CheckpointAsync(DarqSnapshot snapshot, bool waitDurable = false, CancellationToken cancellationToken = default)
    {
        ArgumentNullException.ThrowIfNull(snapshot);
        DarqMessage[] messages;
        lock (_selfMessages)
        {
            if (!_selfReplayRead)
            {
                throw new InvalidOperationException(
                    $"Remote processor {Incarnation} of DARQ '{Darq}' has read {_replayRead} of its {ReplayCount} replayed messages: read the replay's " +
                    "SELF messages (they come first) from ReadAllAsync before a checkpoint with a snapshot function, which must see all of them.");
            }

            if (_selfMessages.Count == 0)
            {
                return Task.FromResult(new DarqCheckpointResult([], [], -1, 0));
            }

            messages = new DarqMessage[_selfMessages.Count];
            int i = 0;
            foreach (var (lsn, payload) in _selfMessages)
            {
                messages[i++] = new DarqMessage(lsn, DarqMessageKind.Self, payload, IsReplay: false);
            }
        }

        // User code outside the lock: if it throws, nothing was sent and the table is unchanged.
        var payloads = snapshot(messages) ?? throw new InvalidOperationException(
            $"Remote processor {Incarnation} of DARQ '{Darq}': the snapshot function returned null; return an empty list to replace the SELF messages by nothing.");
        var replace = new long[messages.Length];
        for (int i = 0; i < replace.Length; i++)
        {
            replace[i] = messages[i].Lsn;
        }

        return SendCheckpointAsync(replace, payloads, waitDurable, cancellationToken);
    }

    /// <summary>Sends the explicit-LSN Checkpoint RPC; once the DARQ took it, swaps the replaced messages for the snapshot's in the table.</summary>
    private async Task<DarqCheckpointResult> SendCheckpointAsync(IReadOnlyList<long> replace, IReadOnlyList<ReadOnlyMemory<byte>> snapshot, bool waitDurable,
        CancellationToken cancellationToken)
    {
        var request = new CheckpointRequest { Darq = Darq, Incarnation = Incarnation, WaitDurable = waitDurable };
        request.Replace.Add(replace);
        foreach (var payload in snapshot)
        {
            request.Snapshot.Add(ByteString.CopyFrom(payload.Span));
        }

        CheckpointReply reply;
        try
        {
            reply = await _client.CheckpointAsync(request, cancellationToken: cancellationToken).ConfigureAwait(false);
        }
        catch (RpcException e) when (DarqRpcErrors.ToDarqException(e) is { } refused)
        {
            throw refused;
        }
        catch (RpcException e) when (e.StatusCode == StatusCode.Cancelled && cancellationToken.IsCancellationRequested)
        {
            throw new OperationCanceledException($"A checkpoint of remote processor {Incarnation} of DARQ '{Darq}' was cancelled; it may or may not have been appended.", e, cancellationToken);
        }

        lock (_selfMessages)
        {
            RemoveSelf(reply.ReplacedLsns);
            for (int i = 0; i < reply.SelfLsns.Count && i < request.Snapshot.Count; i++)
            {
                AddSelf(reply.SelfLsns[i], request.Snapshot[i].Memory);
            }
        }

        return new DarqCheckpointResult([.. reply.ReplacedLsns], [.. reply.SelfLsns], reply.CheckpointLsn, reply.DurableAt);
    }

    /// <summary>Notes a message read from the stream: a replayed plain SELF message joins the table.</summary>
    private void NoteRead(long lsn, DarqMessageKind kind, ReadOnlyMemory<byte> payload, bool isReplay)
    {
        lock (_selfMessages)
        {
            if (_selfReplayRead)
            {
                return;
            }

            // SELF messages (activities among them) come first in the replay: the first IN or live message, or the
            // replay's end, means every replayed SELF message was read.
            if (!isReplay || kind == DarqMessageKind.In)
            {
                EndSelfReplay();
                return;
            }

            if (kind == DarqMessageKind.Self && !_goneBeforeReplay.Contains(lsn))
            {
                AddSelf(lsn, payload);
            }

            if (++_replayRead == ReplayCount)
            {
                EndSelfReplay();
            }
        }
    }

    /// <summary>Under the table's lock.</summary>
    private void EndSelfReplay()
    {
        _selfReplayRead = true;
        _goneBeforeReplay.Clear();
    }

    /// <summary>Under the table's lock.</summary>
    private void AddSelf(long lsn, ReadOnlyMemory<byte> payload)
    {
        if (_selfMessages.TryAdd(lsn, payload))
        {
            _selfBytes += payload.Length;
        }
    }

    /// <summary>Drops consumed or replaced LSNs from the table (IN LSNs are not in it); under the table's lock.</summary>
    private void RemoveSelf(IEnumerable<long> lsns)
    {
        foreach (long lsn in lsns)
        {
            if (_selfMessages.Remove(lsn, out var payload))
            {
                _selfBytes -= payload.Length;
            }
            else if (!_selfReplayRead)
            {
                _goneBeforeReplay.Add(lsn);
            }
        }
    }

    /// <summary>Waits until the remote DARQ's log is durable up to an address (from a step result), committing if needed.</summary>
    /// <param name="address">The address.</param>
    /// <param name="cancellationToken">Cancels waiting.</param>
    /// <exception cref="DarqStaleIncarnationException">
    /// The DARQ restarted since this processor registered: the address may be of a step the restart lost, so it is not
    /// acknowledged; register again (the replay shows what the log holds).
    /// </exception>
    public async Task WaitForCommitAsync(long address, CancellationToken cancellationToken = default)
    {
        var request = new WaitForCommitRequest { Darq = Darq, Address = address, Instance = _instance, Incarnation = Incarnation };
        try
        {
            await _client.WaitForCommitAsync(request, cancellationToken: cancellationToken).ConfigureAwait(false);
        }
        catch (RpcException e) when (DarqRpcErrors.ToDarqException(e) is { } refused)
        {
            throw refused;
        }
    }

    /// <summary>Cancels the message stream.</summary>
    public void Dispose()
    {
        _closing.Cancel();
        _call.Dispose();
        _closing.Dispose();
    }

    /// <summary>The automatic checkpoint policy; null when off.</summary>
    private AutoCheckpointPolicy? _autoCheckpoint;

    /// <summary>Steps through this processor since the last automatic checkpoint attempt.</summary>
    private long _stepsSinceCheckpoint;

    /// <summary>1 while an automatic checkpoint runs: steps that finish meanwhile do not start another.</summary>
    private int _autoCheckpointRunning;

    private DarqCheckpointResult? _lastAutoCheckpoint;

    private Exception? _lastAutoCheckpointError;

    /// <summary>The last automatic checkpoint that compacted something (its snapshot's LSNs); null before the first.</summary>
    public DarqCheckpointResult? LastAutoCheckpoint => Volatile.Read(ref _lastAutoCheckpoint);

    /// <summary>
    /// Why the last automatic checkpoint attempt failed (the snapshot function threw, the DARQ refused the checkpoint, or
    /// the call failed); null before any failure and again after the next attempt that succeeds.
    /// </summary>
    public Exception? LastAutoCheckpointError => Volatile.Read(ref _lastAutoCheckpointError);

    /// <summary>
    /// Turns on automatic checkpoints: after every <paramref name="everySteps"/>-th step through this processor; the same as
    /// <see cref="EnableAutoCheckpoint(DarqCheckpointPolicy, DarqSnapshot, ILogger?)"/> with only
    /// <see cref="DarqCheckpointPolicy.EverySteps"/> set.
    /// </summary>
    /// <param name="everySteps">How many steps between checkpoints, at least 1.</param>
    /// <param name="snapshot">Turns the unconsumed plain SELF messages into their replacement.</param>
    /// <param name="logger">Receives failed attempts (event 4120, warning) and due or deferred ones (4121, 4122, debug); none by default.</param>
    /// <exception cref="ArgumentOutOfRangeException"><paramref name="everySteps"/> is below 1.</exception>
    public void EnableAutoCheckpoint(int everySteps, DarqSnapshot snapshot, ILogger? logger = null)
    {
        ArgumentOutOfRangeException.ThrowIfLessThan(everySteps, 1);
        EnableAutoCheckpoint(new DarqCheckpointPolicy { EverySteps = everySteps }, snapshot, logger);
    }

    /// <summary>
    /// Turns on automatic checkpoints, as <see cref="DarqProcessor.EnableAutoCheckpoint(DarqCheckpointPolicy, DarqSnapshot)"/>
    /// does for a co-located processor: after a step through this processor that reaches any threshold of
    /// <paramref name="policy"/>, <see cref="CheckpointAsync(DarqSnapshot, bool, CancellationToken)"/> with
    /// <paramref name="snapshot"/> runs before <see cref="StepAsync"/> returns. The SELF thresholds read this processor's
    /// table (<see cref="UnconsumedSelfCount"/>, <see cref="UnconsumedSelfBytes"/>), so checking them costs no call.
    /// Replaces an earlier policy.
    /// </summary>
    /// <param name="policy">The thresholds (validated here); it is immutable, so it may be shared.</param>
    /// <param name="snapshot">Turns the unconsumed plain SELF messages into their replacement; runs on the stepping thread.</param>
    /// <param name="logger">Receives failed attempts (event 4120, warning) and due or deferred ones (4121, 4122, debug); none by default.</param>
    /// <exception cref="ArgumentException">The policy sets no threshold, or one below 1 (the message names it); nothing changes.</exception>
    /// <remarks>
    /// <para>The step's result is returned whatever the checkpoint does. A failed automatic checkpoint (the snapshot function
    /// threw, the DARQ refused it, the call failed) changes nothing, is logged and kept in <see cref="LastAutoCheckpointError"/>,
    /// and is tried again after the next step that reaches a threshold: with <see cref="DarqCheckpointPolicy.EverySteps"/>,
    /// that many steps later; with a SELF threshold, which a failed checkpoint leaves reached, after the next step.</para>
    /// <para>Until the replay's SELF messages have been read from <see cref="ReadAllAsync"/> a snapshot would miss them, so
    /// a due checkpoint waits (event 4122) and is taken after the first step once they are read.</para>
    /// <para>The checkpoint is a call of its own after the step's: a step taken concurrently by another task is not in the
    /// snapshot (see <see cref="CheckpointAsync(DarqSnapshot, bool, CancellationToken)"/>). Steps that finish while an
    /// automatic checkpoint runs do not start another. Disposing the processor cancels a running one.</para>
    /// </remarks>
    public void EnableAutoCheckpoint(DarqCheckpointPolicy policy, DarqSnapshot snapshot, ILogger? logger = null)
    {
        ArgumentNullException.ThrowIfNull(policy);
        ArgumentNullException.ThrowIfNull(snapshot);
        policy.Validate();
        Interlocked.Exchange(ref _stepsSinceCheckpoint, 0);
        Volatile.Write(ref _autoCheckpoint, new AutoCheckpointPolicy(policy, snapshot, logger ?? NullLogger.Instance));
    }

    /// <summary>Turns automatic checkpoints off (one already running finishes).</summary>
    public void DisableAutoCheckpoint() => Volatile.Write(ref _autoCheckpoint, null);

    /// <summary>Counts a step this processor appended and takes the automatic checkpoint when it is due.</summary>
    private async Task CheckpointIfDueAsync(AutoCheckpointPolicy policy)
    {
        long since = Interlocked.Increment(ref _stepsSinceCheckpoint);
        string? reached;
        bool replayRead;
        int selfCount;
        long selfBytes;
        lock (_selfMessages)
        {
            selfCount = _selfMessages.Count;
            selfBytes = _selfBytes;
            replayRead = _selfReplayRead;
            reached = policy.Thresholds.Reached(since, selfCount, selfBytes);
        }

        if (reached is null)
        {
            return;
        }

        if (!replayRead)
        {
            // Counted steps stay counted: the first step after the replay's SELF messages are read takes it.
            DarqGrpcLogMessages.AutoCheckpointDeferred(policy.Logger, Darq, Incarnation, reached);
            return;
        }

        if (Interlocked.CompareExchange(ref _autoCheckpointRunning, 1, 0) != 0)
        {
            return;
        }

        try
        {
            Interlocked.Exchange(ref _stepsSinceCheckpoint, 0);
            DarqGrpcLogMessages.AutoCheckpointDue(policy.Logger, Darq, Incarnation, reached, selfCount, selfBytes);
            CancellationToken closing;
            try
            {
                closing = _closing.Token;
            }
            catch (ObjectDisposedException)
            {
                return;
            }

            try
            {
                // The processor's own token: the caller's step is appended, and its cancellation must not look like a failed step.
                var checkpoint = await CheckpointAsync(policy.Snapshot, waitDurable: false, closing).ConfigureAwait(false);
                if (checkpoint.CheckpointLsn >= 0)
                {
                    Volatile.Write(ref _lastAutoCheckpoint, checkpoint);
                }

                Volatile.Write(ref _lastAutoCheckpointError, null);
            }
            catch (OperationCanceledException) when (closing.IsCancellationRequested)
            {
                // Disposed meanwhile: nothing to report.
            }
#pragma warning disable CA1031 // The step succeeded; a failed automatic checkpoint is logged, kept and retried later, not reported as the step's failure.
            catch (Exception e)
#pragma warning restore CA1031
            {
                Volatile.Write(ref _lastAutoCheckpointError, e);
                DarqGrpcLogMessages.AutoCheckpointFailed(policy.Logger, e, Darq, Incarnation);
            }
        }
        finally
        {
            Volatile.Write(ref _autoCheckpointRunning, 0);
        }
    }

    private sealed record AutoCheckpointPolicy(DarqCheckpointPolicy Thresholds, DarqSnapshot Snapshot, ILogger Logger);
}
