namespace Dse.Samples.TravelReservation;

/// <summary>
/// The sample's consistency check, on what every reservation service holds after a quiesce (read without a DSE header,
/// so only recoverable state) and what the frontend and the clients know of every trip.
/// </summary>
/// <remarks>
/// The rules: no item holds more trips than its capacity, nor one trip twice; a confirmed trip holds its item in every
/// service it booked and nothing else; a failed trip holds nothing anywhere; every holder is a trip the frontend knows
/// (no orphan); every trip has exactly one outcome at the frontend; and every outcome a client was told is the one the
/// frontend records (nothing a client saw was lost).
/// </remarks>
public static class TravelChecker
{
    /// <summary>Checks the rules; returns one line per violation, none when everything holds.</summary>
    /// <exception cref="ArgumentException">Two records name the same trip.</exception>
    public static IReadOnlyList<string> Check(IReadOnlyList<ServiceHoldings> services, IReadOnlyList<TripRecord> trips)
    {
        ArgumentNullException.ThrowIfNull(services);
        ArgumentNullException.ThrowIfNull(trips);
        var violations = new List<string>();
        var byTrip = new Dictionary<string, TripRecord>(StringComparer.Ordinal);
        foreach (var trip in trips)
        {
            if (!byTrip.TryAdd(trip.Trip, trip))
            {
                throw new ArgumentException($"Two records name trip '{trip.Trip}'.", nameof(trips));
            }
        }

        // Every hold, by trip; capacity and double holds on the way.
        var holds = new Dictionary<string, List<TripBooking>>(StringComparer.Ordinal);
        foreach (var service in services)
        {
            foreach (var item in service.Items)
            {
                string where = $"{service.Service}/{item.Item}";
                if (item.Holders.Count > item.Capacity)
                {
                    violations.Add($"capacity: {where} has {item.Holders.Count} holders, over its capacity {item.Capacity}");
                }

                var seen = new HashSet<string>(StringComparer.Ordinal);
                foreach (string holder in item.Holders)
                {
                    if (!seen.Add(holder))
                    {
                        violations.Add($"double hold: {holder} holds {where} twice");
                        continue;
                    }

                    if (!holds.TryGetValue(holder, out var held))
                    {
                        holds[holder] = held = [];
                    }

                    held.Add(new TripBooking(service.Service, item.Item));
                    if (!byTrip.TryGetValue(holder, out var record) || !record.KnownToFrontend)
                    {
                        violations.Add($"orphan: {where} is held by {holder}, a trip the frontend does not know");
                    }
                }
            }
        }

        foreach (var trip in trips)
        {
            CheckTrip(trip, holds.GetValueOrDefault(trip.Trip) ?? [], violations);
        }

        return violations;
    }

    /// <summary>Writes <c>violations N</c>, then each violation on a line of its own.</summary>
    public static void Write(TextWriter writer, IReadOnlyList<string> violations)
    {
        ArgumentNullException.ThrowIfNull(writer);
        ArgumentNullException.ThrowIfNull(violations);
        writer.WriteLine($"violations {violations.Count}");
        foreach (string violation in violations)
        {
            writer.WriteLine($"  {violation}");
        }
    }

    private static void CheckTrip(TripRecord trip, List<TripBooking> held, List<string> violations)
    {
        string id = trip.Trip;
        if (!trip.KnownToFrontend)
        {
            // Its holds, if any, were reported as orphans.
            violations.Add(trip.Told is { } told
                ? $"lost outcome: {id}'s client was told '{told}', but the frontend does not know the trip"
                : $"no outcome: {id} was never answered, and the frontend does not know it");
            return;
        }

        if (trip.Outcomes.Count != 1)
        {
            violations.Add(trip.Outcomes.Count == 0
                ? $"no outcome: {id} has none at the frontend"
                : $"several outcomes: {id} has {trip.Outcomes.Count} at the frontend ({string.Join("; ", trip.Outcomes)})");
            return;
        }

        string outcome = trip.Outcomes[0];
        if (trip.Told is { } answer && answer != outcome)
        {
            violations.Add($"lost outcome: {id}'s client was told '{answer}', but the frontend records '{outcome}'");
        }

        if (outcome == TripRecord.Confirmed)
        {
            foreach (var booking in trip.Bookings)
            {
                if (!held.Contains(booking))
                {
                    violations.Add($"confirmed, not held: {id} is confirmed but does not hold {booking.Service}/{booking.Item}");
                }
            }

            foreach (var hold in held)
            {
                if (!trip.Bookings.Contains(hold))
                {
                    violations.Add($"stray hold: {id} holds {hold.Service}/{hold.Item}, which it did not book");
                }
            }
        }
        else if (outcome.StartsWith(TripRecord.FailedPrefix, StringComparison.Ordinal))
        {
            foreach (var hold in held)
            {
                violations.Add($"failed, still held: {id} ended '{outcome}' but holds {hold.Service}/{hold.Item}");
            }
        }
        else
        {
            violations.Add($"unknown outcome: {id} ended '{outcome}'");
        }
    }
}
