using Grpc.Core;

namespace Dse.Grpc;

/// <summary>
/// A response stream that lets each message leave only once the state it was written from is recoverable: the version
/// the writing segment ran in must be committed first. The write is asynchronous, so the segment ends (and the version
/// can persist) while it waits.
/// </summary>
internal sealed class DseBarrierStreamWriter<T>(IServerStreamWriter<T> inner, DseCallScope scope, string method) : IServerStreamWriter<T>
{
    /// <inheritdoc />
    public WriteOptions? WriteOptions
    {
        get => inner.WriteOptions;
        set => inner.WriteOptions = value;
    }

    /// <inheritdoc />
    public Task WriteAsync(T message) => WriteAsync(message, CancellationToken.None);

    /// <inheritdoc />
    public Task WriteAsync(T message, CancellationToken cancellationToken)
    {
        if (DseCallScope.CurrentSegment != scope)
        {
            throw new InvalidOperationException($"{method}: write the response stream from the handler's own flow (without ConfigureAwait(false)), so DSE knows which state the message comes from.");
        }

        var owner = scope.Owner;
        return WriteWhenCommittedAsync(owner.CurrentVersion, owner.WorldLine, message, cancellationToken);
    }

    private async Task WriteWhenCommittedAsync(long version, long worldLine, T message, CancellationToken cancellationToken)
    {
        var owner = scope.Owner;
        using var linked = CancellationTokenSource.CreateLinkedTokenSource(scope.Cancellation, cancellationToken);
        try
        {
            await owner.WaitForCommitAsync(version, worldLine, linked.Token).ConfigureAwait(false);
        }
        catch (Exception ex) when (ex is not OperationCanceledException)
        {
            throw DseRpcErrors.Map(ex, owner, method);
        }

        await inner.WriteAsync(message, cancellationToken).ConfigureAwait(false);
    }
}
