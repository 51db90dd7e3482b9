using System.Text;
using Dse.Darq;

namespace Dse.Samples.SearchTrend;

/// <summary>
/// Runs one stage's co-located DARQ processor, and registers a new one whenever it ends without being stopped: killed
/// (as a crashed processor process would be replaced), or superseded by a rollback under general speculation. Each new
/// processor starts from empty state and rebuilds it from the replay: the stage's one SELF message first, then its
/// unconsumed IN messages in order.
/// </summary>
internal sealed class StageRunner
{
    private readonly IStageLogic _logic;
    private readonly Action<Darq.Darq, string, DarqStepResult>? _stepped;
    private readonly Action<Darq.Darq, long>? _loaded;
    private CancellationTokenSource _stop = new();
    private CancellationTokenSource _processor = new();
    private Task _loop = Task.CompletedTask;

    /// <param name="name">The stage's name.</param>
    /// <param name="logic">What the stage does with each message.</param>
    /// <param name="stepped">Called after each step, with the input and the step's result.</param>
    /// <param name="loaded">Called after the replay handed over the stage's state, with the state's LSN.</param>
    public StageRunner(string name, IStageLogic logic, Action<Darq.Darq, string, DarqStepResult>? stepped = null,
        Action<Darq.Darq, long>? loaded = null)
    {
        Name = name;
        _logic = logic;
        _stepped = stepped;
        _loaded = loaded;
    }

    public string Name { get; }

    /// <summary>Processors registered so far (the first, and one per kill or rollback).</summary>
    public int Registrations { get; private set; }

    /// <summary>What ended the processor loop, if it failed (an error no new processor can get past).</summary>
    public Exception? Fault => _loop.Exception?.InnerException;

    /// <summary>Starts processing the messages of <paramref name="darq"/>.</summary>
    public void Start(Darq.Darq darq)
    {
        _stop = new CancellationTokenSource();
        _loop = RunAsync(darq, _stop.Token);
    }

    /// <summary>Kills the current processor where it stands (maybe mid-step); a new one registers and replays.</summary>
    public void KillProcessor() => _processor.Cancel();

    /// <summary>Stops processing (before the DARQ is closed).</summary>
    public async Task StopAsync()
    {
        await _stop.CancelAsync();
        _processor.Cancel();
        await _loop;
    }

    private async Task RunAsync(Darq.Darq darq, CancellationToken stop)
    {
        while (!stop.IsCancellationRequested)
        {
            _processor = CancellationTokenSource.CreateLinkedTokenSource(stop);
            var token = _processor.Token;
            try
            {
                var processor = await darq.RegisterProcessorAsync(token);
                Registrations++;
                _logic.Load("");
                await ProcessAsync(darq, processor, token);
                return;   // The DARQ closed its stream: it is being closed.
            }
            catch (OperationCanceledException) when (token.IsCancellationRequested)
            {
                // Killed (or stopped): a new processor takes over, unless stopped.
            }
            catch (DarqStaleIncarnationException)
            {
                // Superseded: a rollback (general speculation) replaced this processor's view of the DARQ.
            }
            catch (ObjectDisposedException) when (stop.IsCancellationRequested)
            {
                return;
            }
        }
    }

    private async Task ProcessAsync(Darq.Darq darq, DarqProcessor processor, CancellationToken token)
    {
        long state = -1;
        var outputs = new List<(string Destination, string Payload)>();
        var step = new DarqStep();
        await foreach (var message in processor.ReadAllAsync(token))
        {
            string text = Encoding.UTF8.GetString(message.Payload.Span);
            if (message.Kind == DarqMessageKind.Self)
            {
                // Replay: the state the last step wrote.
                _logic.Load(text);
                state = message.Lsn;
                _loaded?.Invoke(darq, state);
                continue;
            }

            // One step: consume the input and the previous state, write the new state and the outputs, all or nothing.
            outputs.Clear();
            _logic.Apply(text, outputs);
            if (!_logic.HasState && outputs.Count == 0)
            {
                // Nothing to keep or send (a query the filter drops): the consume-only step has a call of its own.
                var consumed = await processor.ConsumeAsync(message.Lsn, token);
                _stepped?.Invoke(darq, text, consumed.ToStepResult());
                continue;
            }

            step.Clear().Consume(message);
            if (_logic.HasState)
            {
                if (state >= 0)
                {
                    step.Consume(state);
                }

                step.AddSelf(Encoding.UTF8.GetBytes(_logic.Save()));
            }

            foreach (var (destination, payload) in outputs)
            {
                step.AddOut(destination, Encoding.UTF8.GetBytes(payload));
            }

            var result = await processor.StepAsync(step, token);
            if (_logic.HasState)
            {
                state = result.SelfLsns[0];
            }

            _stepped?.Invoke(darq, text, result);
        }
    }
}
