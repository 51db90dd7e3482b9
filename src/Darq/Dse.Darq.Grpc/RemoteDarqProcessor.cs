using System.Runtime.CompilerServices;
using Dse.Darq.Grpc.V1;
using Google.Protobuf;
using Grpc.Core;

namespace Dse.Darq.Grpc;

/// <summary>
/// A processor of a remote DARQ: registered with a persisted incarnation, it streams the messages to step (replay first,
/// then live IN traffic) and steps with the same <see cref="DarqStep"/> as a co-located <see cref="DarqProcessor"/>.
/// A newer registration ends the stream with a <see cref="DarqStaleIncarnationException"/>, and steps are refused from
/// then on. Disposing it cancels the stream (the registration stands until a newer one).
/// </summary>
public sealed class RemoteDarqProcessor : IDisposable
{
    private readonly DarqService.DarqServiceClient _client;
    private readonly AsyncServerStreamingCall<ProcessorEvent> _call;
    private readonly CancellationTokenSource _closing;
    private int _reading;

    /// <summary>The open instance of the DARQ this processor registered with (0 from a server that does not say).</summary>
    private readonly long _instance;

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
    }

    /// <summary>The DARQ's name.</summary>
    public string Darq { get; }

    /// <summary>The persisted incarnation this registration received.</summary>
    public long Incarnation { get; }

    /// <summary>How many messages the replay holds; they come before any live message.</summary>
    public int ReplayCount { get; }

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

        return new DarqStepResult([.. reply.SelfLsns], [.. reply.OutLsns], reply.CompletionLsn, reply.DurableAt);
    }

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
    public async Task<DarqCheckpointResult> CheckpointAsync(IReadOnlyList<long> replace, IReadOnlyList<ReadOnlyMemory<byte>> snapshot, bool waitDurable = false,
        CancellationToken cancellationToken = default)
    {
        ArgumentNullException.ThrowIfNull(replace);
        ArgumentNullException.ThrowIfNull(snapshot);
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

        return new DarqCheckpointResult([.. reply.ReplacedLsns], [.. reply.SelfLsns], reply.CheckpointLsn, reply.DurableAt);
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
}
