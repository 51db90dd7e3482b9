namespace Dse.Functions.Engine;

/// <summary>A client's request for one transaction: the root call, and where its outcome goes.</summary>
internal sealed class TransactionRequest(long requestId, EntityAddress target, string method, byte[] args)
{
    private readonly TaskCompletionSource<TransactionOutcome> _outcome = new(TaskCreationOptions.RunContinuationsAsynchronously);

    public long RequestId { get; } = requestId;

    public EntityAddress Target { get; } = target;

    public string Method { get; } = method;

    public byte[] Args { get; } = args;

    public Task<TransactionOutcome> Outcome => _outcome.Task;

    public void Complete(TransactionOutcome outcome) => _outcome.TrySetResult(outcome);

    public void Fail(Exception error) => _outcome.TrySetException(error);

    public override string ToString() => $"#{RequestId} {Target}.{Method}";
}
