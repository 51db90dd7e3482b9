using System.Collections.Concurrent;

namespace Dse.Darq;

/// <summary>
/// An in-process map from destination names to destinations; a <see cref="Darq"/> added here receives OUT messages
/// addressed to its name. Adding a name again replaces the destination (a DARQ reopened after a crash).
/// </summary>
public sealed class DarqDestinationRegistry : IDarqDestinations
{
    private readonly ConcurrentDictionary<string, IDarqDestination> _destinations = new(StringComparer.Ordinal);

    /// <summary>Makes a DARQ the destination for its name, replacing any previous one.</summary>
    /// <param name="darq">The DARQ.</param>
    public void Add(Darq darq)
    {
        ArgumentNullException.ThrowIfNull(darq);
        _destinations[darq.Name] = new InProcessDestination(darq);
    }

    /// <summary>Makes <paramref name="destination"/> the destination for <paramref name="name"/>, replacing any previous one.</summary>
    /// <param name="name">The destination name.</param>
    /// <param name="destination">The destination.</param>
    public void Add(string name, IDarqDestination destination)
    {
        ArgumentException.ThrowIfNullOrEmpty(name);
        ArgumentNullException.ThrowIfNull(destination);
        _destinations[name] = destination;
    }

    /// <summary>Removes a destination; messages to it stay pending at their sources until it is added again.</summary>
    /// <param name="name">The destination name.</param>
    /// <returns>Whether the name was registered.</returns>
    public bool Remove(string name) => _destinations.TryRemove(name, out _);

    /// <inheritdoc />
    public IDarqDestination? Resolve(string name) => _destinations.TryGetValue(name, out var destination) ? destination : null;

    /// <summary>
    /// Delivers into a co-located DARQ and acknowledges once the message is durable there. A message the DARQ can never take
    /// (larger than its <see cref="DarqOptions.MaxMessageSize"/>) is refused for good.
    /// </summary>
    private sealed class InProcessDestination(Darq darq) : IDarqDestination
    {
        public async ValueTask DeliverAsync(DarqDelivery delivery, CancellationToken cancellationToken)
        {
            try
            {
                await darq.ReceiveDurablyAsync(delivery, cancellationToken).ConfigureAwait(false);
            }
            catch (ArgumentException e)
            {
                throw new DarqDeliveryRefusedException(darq.Name, e.Message, e);
            }
        }

        public async ValueTask DeliverBatchAsync(IReadOnlyList<DarqDelivery> deliveries, CancellationToken cancellationToken)
        {
            try
            {
                await darq.ReceiveBatchDurablyAsync(deliveries, cancellationToken).ConfigureAwait(false);
            }
            catch (ArgumentException e)
            {
                throw new DarqDeliveryRefusedException(darq.Name, e.Message, e);
            }
        }

        public async ValueTask<DarqSentBatch> SendBatchAsync(IReadOnlyList<DarqDelivery> deliveries, CancellationToken cancellationToken)
        {
            long durableAt;
            try
            {
                (_, durableAt) = await darq.ReceiveBatchAsync(deliveries, cancellationToken).ConfigureAwait(false);
            }
            catch (ArgumentException e)
            {
                throw new DarqDeliveryRefusedException(darq.Name, e.Message, e);
            }

            // This instance only: a reopened DARQ is another destination object, and waiting on a closed one fails.
            return new DarqSentBatch(token => darq.EnsureDurableAsync(durableAt, token));
        }

        public async ValueTask<ReadOnlyMemory<byte>> DeliverSpeculativeAsync(DarqDelivery delivery, CancellationToken cancellationToken)
        {
            try
            {
                return await darq.ReceiveSpeculativeAsync(delivery, cancellationToken).ConfigureAwait(false);
            }
            catch (ArgumentException e)
            {
                throw new DarqDeliveryRefusedException(darq.Name, e.Message, e);
            }
        }

        /// <summary>Only a DARQ under general speculation consumes the source's header (otherwise it receives durably).</summary>
        public bool ReceivesSpeculatively => darq.DseStateObject is not null;
    }
}
