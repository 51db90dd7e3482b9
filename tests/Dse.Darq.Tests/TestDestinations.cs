namespace Dse.Darq.Tests;

/// <summary>
/// Wraps a <see cref="DarqDestinationRegistry"/> for tests: counts deliveries, signals the first unknown destination
/// and the first failed delivery, and can hold deliveries (a gate) so a destination can crash with none in flight.
/// </summary>
internal sealed class TestDestinations : IDarqDestinations
{
    private readonly TaskCompletionSource _unknown = new(TaskCreationOptions.RunContinuationsAsynchronously);
    private readonly TaskCompletionSource _failed = new(TaskCreationOptions.RunContinuationsAsynchronously);
    private int _attempts;
    private int _acknowledged;

    public DarqDestinationRegistry Registry { get; } = new();

    /// <summary>Held by every delivery for its whole duration; take it to pause deliveries.</summary>
    public SemaphoreSlim Gate { get; } = new(1, 1);

    /// <summary>Completes when a destination name was first found unknown.</summary>
    public Task Unknown => _unknown.Task;

    /// <summary>Completes when a delivery first failed.</summary>
    public Task Failed => _failed.Task;

    public int Attempts => Volatile.Read(ref _attempts);

    public int Acknowledged => Volatile.Read(ref _acknowledged);

    public IDarqDestination? Resolve(string name)
    {
        var inner = Registry.Resolve(name);
        if (inner is null)
        {
            _unknown.TrySetResult();
            return null;
        }

        return new Wrapped(this, inner);
    }

    private sealed class Wrapped(TestDestinations owner, IDarqDestination inner) : IDarqDestination
    {
        public bool ReceivesSpeculatively => inner.ReceivesSpeculatively;

        public async ValueTask DeliverAsync(DarqDelivery delivery, CancellationToken cancellationToken)
            => await DeliverSpeculativeAsync(delivery, cancellationToken);

        public async ValueTask<ReadOnlyMemory<byte>> DeliverSpeculativeAsync(DarqDelivery delivery, CancellationToken cancellationToken)
        {
            await owner.Gate.WaitAsync(cancellationToken);
            try
            {
                Interlocked.Increment(ref owner._attempts);
                var reply = await inner.DeliverSpeculativeAsync(delivery, cancellationToken);
                Interlocked.Increment(ref owner._acknowledged);
                return reply;
            }
            catch (Exception) when (!cancellationToken.IsCancellationRequested)
            {
                owner._failed.TrySetResult();
                throw;
            }
            finally
            {
                owner.Gate.Release();
            }
        }
    }
}
