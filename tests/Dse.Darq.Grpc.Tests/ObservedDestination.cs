namespace Dse.Darq.Grpc.Tests;

/// <summary>
/// The destination "b" of a source DARQ, wrapping a real one: counts attempts, signals the first failure, and can drop
/// the acknowledgement of a delivery that succeeded (as a lost reply would), so the source resends it.
/// </summary>
internal sealed class ObservedDestination(string name, IDarqDestination inner) : IDarqDestination, IDarqDestinations
{
    private IDarqDestination _inner = inner;

    private readonly TaskCompletionSource _failed = new(TaskCreationOptions.RunContinuationsAsynchronously);
    private int _attempts;
    private int _dropAcks;

    public int Attempts => Volatile.Read(ref _attempts);

    /// <summary>Where deliveries go from now on (a destination that came back on another address).</summary>
    public void Redirect(IDarqDestination destination) => Volatile.Write(ref _inner, destination);

    public Task FirstFailure => _failed.Task;

    /// <summary>Drops the acknowledgement of the next successful delivery.</summary>
    public void DropNextAcknowledgement() => Volatile.Write(ref _dropAcks, 1);

    public IDarqDestination? Resolve(string destination) => destination == name ? this : null;

    public async ValueTask DeliverAsync(DarqDelivery delivery, CancellationToken cancellationToken)
    {
        Interlocked.Increment(ref _attempts);
        try
        {
            await Volatile.Read(ref _inner).DeliverAsync(delivery, cancellationToken);
        }
        catch (Exception) when (!cancellationToken.IsCancellationRequested)
        {
            _failed.TrySetResult();
            throw;
        }

        if (Interlocked.Exchange(ref _dropAcks, 0) == 1)
        {
            throw new IOException("test: the acknowledgement was lost on the way back");
        }
    }
}
