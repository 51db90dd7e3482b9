namespace Dse.Darq;

/// <summary>
/// Performs an activity on its external service, passing <see cref="DarqActivity.IdempotencyToken"/> along so that the
/// service performs it once however often it is called; returns the result the completion step is built from. An
/// exception is retried with backoff (with the same token).
/// </summary>
/// <param name="activity">The activity.</param>
/// <param name="cancellationToken">Cancelled when the runner stops.</param>
/// <returns>The activity's result.</returns>
public delegate ValueTask<ReadOnlyMemory<byte>> DarqActivityHandler(DarqActivity activity, CancellationToken cancellationToken);
