using Dse.Samples.TravelReservation.Wire;
using Dse.Workflows;

namespace Dse.Samples.TravelReservation;

/// <summary>
/// The trip workflow, a saga: reserve the trip's item from each of its services in booking order, registering a cancel
/// after each reservation; on a refusal (the item is full) or a service that stays unreachable, cancel what was
/// reserved, last first, and end <c>failed: SERVICE REASON</c>; otherwise end <c>confirmed</c>.
/// </summary>
/// <remarks>
/// Workflow code, replayed deterministically by the engine: every call to a service is a step (recorded, retried,
/// re-issued after a restart under the same idempotency key), and the services deduplicate by trip, so a step that runs
/// twice holds once. Steps run with the workflow's DSE header, so the reservation services answer speculatively and
/// the frontend's log and the stores roll back together after a crash.
/// </remarks>
internal sealed class TripWorkflow(IReadOnlyList<Reservation.ReservationClient> services)
{
    /// <summary>The workflow type the frontend registers.</summary>
    public const string Type = "trip";

    // A restarted service is back within seconds: keep trying a reservation for about half a minute, and a cancel (whose
    // failure would leave a hold behind) for about a minute.
    private static readonly StepOptions s_reserve = new() { MaxAttempts = 30, MaxBackoff = TimeSpan.FromSeconds(1), AttemptTimeout = TimeSpan.FromSeconds(10) };
    private static readonly StepOptions s_cancel = new() { MaxAttempts = 60, MaxBackoff = TimeSpan.FromSeconds(1), AttemptTimeout = TimeSpan.FromSeconds(10) };

    /// <summary>Books the trip <paramref name="context"/> runs for: <see cref="TripInput.Items"/>[i] from service i.</summary>
    /// <exception cref="ArgumentException">The input books no service, or more than the frontend has.</exception>
    public async Task<string> RunAsync(WorkflowContext context, TripInput input)
    {
        ArgumentNullException.ThrowIfNull(context);
        ArgumentNullException.ThrowIfNull(input);
        if (input.Items is not { Count: > 0 } items || items.Count > services.Count)
        {
            throw new ArgumentException($"A trip books 1 to {services.Count} services (got {input.Items?.Count ?? 0}).", nameof(input));
        }

        string trip = context.WorkflowId;
        var saga = new Saga(context);
        for (int i = 0; i < items.Count; i++)
        {
            string service = TravelServices.Names[i];
            string item = items[i];
            var client = services[i];
            Task Cancel(StepContext step, CancellationToken cancellationToken) =>
                client.CancelAsync(new CancelRequest { Item = item, Trip = trip, IdempotencyKey = step.IdempotencyKey }, cancellationToken: cancellationToken).ResponseAsync;

            ReserveResult reserved;
            try
            {
                reserved = await context.CallAsync($"reserve:{service}", async (step, cancellationToken) =>
                {
                    var reply = await client.ReserveAsync(new ReserveRequest { Item = item, Trip = trip, IdempotencyKey = step.IdempotencyKey }, cancellationToken: cancellationToken);
                    return new ReserveResult(reply.Reserved, reply.Reason);
                }, s_reserve);
            }
            catch (StepFailedException)
            {
                // Whether the last attempt took effect is unknown; a cancel of a trip that holds nothing changes nothing.
                saga.AddCompensation($"cancel:{service}", Cancel, s_cancel);
                await saga.CompensateAsync();
                return $"{TripRecord.FailedPrefix}: {service} unavailable";
            }

            if (!reserved.Reserved)
            {
                await saga.CompensateAsync();
                return $"{TripRecord.FailedPrefix}: {service} {reserved.Reason}";
            }

            saga.AddCompensation($"cancel:{service}", Cancel, s_cancel);
        }

        return TripRecord.Confirmed;
    }
}
