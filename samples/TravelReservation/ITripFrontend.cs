namespace Dse.Samples.TravelReservation;

/// <summary>The frontend as the launcher sees it: book a trip, and read what the frontend records of one.</summary>
internal interface ITripFrontend : IDisposable
{
    /// <summary>
    /// Books <paramref name="trip"/>: starts its workflow with <paramref name="input"/>, or joins it if it was started
    /// already, and returns its outcome. A plain call without a DSE header, so the answer comes after a barrier: it
    /// survives any crash.
    /// </summary>
    /// <exception cref="Grpc.Core.RpcException">The call failed (the frontend is down, a rollback got in its way, the deadline passed).</exception>
    Task<string> BookAsync(string trip, TripInput input, DateTime deadline, CancellationToken cancellationToken);

    /// <summary>
    /// What the frontend records of <paramref name="trip"/> (a plain call: recoverable state only): <c>null</c> when it
    /// does not know the trip, otherwise its outcomes (none while it runs).
    /// </summary>
    /// <exception cref="Grpc.Core.RpcException">The call failed.</exception>
    Task<IReadOnlyList<string>?> DescribeAsync(string trip, DateTime deadline, CancellationToken cancellationToken);
}
